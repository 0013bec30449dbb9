"""The bundled coordinator: Kafka group and transaction coordinators, deterministic."""
