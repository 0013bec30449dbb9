# Configuration (lib/offsetscope/config.py, conf/).
#
#   make conf-schema   conf/offsetscope.schema.json from the configuration models; the TOML files
#                      name it (`#:schema` on their first line) so editors check keys as you type.
#                      tests/unit/test_config_schema.py fails while the committed copy is stale.
CONF_SCHEMA := conf/offsetscope.schema.json

conf-schema: install ## write conf/offsetscope.schema.json (JSON Schema of conf/*.toml)
	$(PY) -c 'import pathlib, sys; from offsetscope import config; \
	    changed = config.write_schema(pathlib.Path(sys.argv[1])); \
	    print(sys.argv[1], "written" if changed else "up to date")' $(CONF_SCHEMA)

.PHONY: conf-schema
