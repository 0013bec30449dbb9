package dev.offsetscope.infra;

import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.hadoop.minikdc.MiniKdc;

/**
 * A Kerberos KDC on loopback (Hadoop's MiniKdc on Apache Kerby) with principals and keytabs.
 *
 * <pre>
 *   java -jar offsetscope-kdc-launcher-0.1.0.jar -work DIR [-realm OFFSETSCOPE.LOCAL]
 *        [-host 127.0.0.1] [-port 0] [-principal kafka/localhost] [-principal client] ...
 *        [-exit-on-stdin-close] [-debug]
 * </pre>
 *
 * In DIR: {@code krb5.conf} (for Java: {@code -Djava.security.krb5.conf}; for MIT Kerberos,
 * librdkafka and kinit: {@code KRB5_CONFIG}), one keytab per principal
 * ({@code <principal with / as _>.keytab}, e.g. {@code kafka_localhost.keytab}), {@code kdc/}
 * (the KDC's own data), {@code logs/kdc.log}. Principals are created in the realm
 * ({@code -principal client} is {@code client@REALM}); the default set is
 * {@code kafka/localhost} and {@code client}.
 *
 * When up, one JSON line {@code {"event":"ready",...}} goes to stdout (and DIR/ready.json),
 * with the realm, the KDC's address, krb5.conf and the keytabs. Stops on SIGTERM/SIGINT or, with
 * {@code -exit-on-stdin-close}, at end of file on standard input.
 */
public final class MiniKdcServer {
  private final PrintStream out;
  private MiniKdc kdc;
  private final AtomicBoolean stopped = new AtomicBoolean(false);
  private final CountDownLatch done = new CountDownLatch(1);

  private MiniKdcServer(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    Map<String, List<String>> opts = parse(args);
    File work = new File(one(opts, "work", null)).getAbsoluteFile();
    File logs = new File(work, "logs");
    File data = new File(work, "kdc");
    Support.deleteTree(data);
    if (!logs.isDirectory() && !logs.mkdirs()) {
      throw new IOException("cannot create " + logs);
    }
    System.setProperty("offsetscope.log.dir", logs.getPath());
    PrintStream jsonOut = new PrintStream(new FileOutputStream(FileDescriptor.out), true,
        StandardCharsets.UTF_8);
    System.setOut(System.err);
    MiniKdcServer server = new MiniKdcServer(jsonOut);
    Runtime.getRuntime().addShutdownHook(new Thread(server::stop, "minikdc-stop"));
    try {
      server.start(opts, work, data);
    } catch (Throwable t) {
      jsonOut.println(Support.json(Map.of("event", "failed", "error", String.valueOf(t))));
      t.printStackTrace();
      server.stop();
      System.exit(1);
    }
    if (opts.containsKey("exit-on-stdin-close")) {
      Support.exitOnStdinClose("minikdc-stdin");
    }
    server.done.await();
  }

  private void start(Map<String, List<String>> opts, File work, File data) throws Exception {
    long t0 = System.nanoTime();
    String realm = one(opts, "realm", "OFFSETSCOPE.LOCAL").toUpperCase(Locale.ROOT);
    int dot = realm.indexOf('.');
    if (dot <= 0 || dot == realm.length() - 1) {
      throw new IllegalArgumentException("-realm must look like NAME.DOMAIN, not " + realm);
    }
    String host = one(opts, "host", "127.0.0.1");
    Properties conf = MiniKdc.createConf();
    conf.setProperty(MiniKdc.ORG_NAME, realm.substring(0, dot));
    conf.setProperty(MiniKdc.ORG_DOMAIN, realm.substring(dot + 1));
    conf.setProperty(MiniKdc.KDC_BIND_ADDRESS, host);
    conf.setProperty(MiniKdc.KDC_PORT, one(opts, "port", "0"));
    conf.setProperty(MiniKdc.TRANSPORT, "TCP");
    conf.setProperty(MiniKdc.DEBUG, String.valueOf(opts.containsKey("debug")));
    if (!data.mkdirs()) {
      throw new IOException("cannot create " + data);
    }
    kdc = new MiniKdc(conf, data);
    kdc.start();

    List<String> principals = opts.getOrDefault("principal", List.of("kafka/localhost", "client"));
    Map<String, Object> keytabs = new LinkedHashMap<>();
    for (String principal : principals) {
      String name = principal.contains("@") ? principal.substring(0, principal.indexOf('@'))
          : principal;
      File keytab = new File(work, name.replace('/', '_') + ".keytab");
      Files.deleteIfExists(keytab.toPath());
      kdc.createPrincipal(keytab, name);
      // A keytab is a password: owner-only, as kadmin's ktadd writes it.
      Files.setPosixFilePermissions(keytab.toPath(), PosixFilePermissions.fromString("rw-------"));
      keytabs.put(name + "@" + kdc.getRealm(), keytab.getPath());
    }

    File krb5 = new File(work, "krb5.conf");
    writeAtomically(krb5, krb5Conf(kdc.getRealm(), host, kdc.getPort()));

    Map<String, Object> ready = new LinkedHashMap<>();
    ready.put("event", "ready");
    ready.put("pid", ProcessHandle.current().pid());
    ready.put("realm", kdc.getRealm());
    ready.put("kdc", host + ":" + kdc.getPort());
    ready.put("krb5_conf", krb5.getPath());
    ready.put("keytabs", keytabs);
    ready.put("log_file", new File(work, "logs/kdc.log").getPath());
    ready.put("start_s", Support.round((System.nanoTime() - t0) / 1e9));
    String line = Support.json(ready);
    writeAtomically(new File(work, "ready.json"), line + "\n");
    out.println(line);
  }

  /**
   * A krb5.conf read the same way by Java's Kerberos and by MIT Kerberos: TCP only
   * (udp_preference_limit = 1; the KDC has no UDP transport), no DNS, no reverse lookups (the
   * service principal is kafka/localhost whatever 127.0.0.1 resolves to).
   */
  static String krb5Conf(String realm, String host, int port) {
    return String.join("\n",
        "# Written by offsetscope MiniKdcServer; the KDC listens on TCP only.",
        "[libdefaults]",
        "    default_realm = " + realm,
        "    udp_preference_limit = 1",
        "    dns_lookup_kdc = false",
        "    dns_lookup_realm = false",
        "    dns_canonicalize_hostname = false",
        "    rdns = false",
        "    forwardable = true",
        "    ticket_lifetime = 24h",
        "    renew_lifetime = 7d",
        "",
        "[realms]",
        "    " + realm + " = {",
        "        kdc = " + host + ":" + port,
        "    }",
        "",
        "[domain_realm]",
        "    localhost = " + realm,
        "    .localhost = " + realm,
        "    127.0.0.1 = " + realm,
        "") + "\n";
  }

  private void stop() {
    if (!stopped.compareAndSet(false, true)) {
      return;
    }
    try {
      if (kdc != null) {
        kdc.stop();
      }
    } catch (Throwable t) {
      t.printStackTrace();
    }
    out.println(Support.json(Map.of("event", "stopped")));
    out.flush();
    done.countDown();
  }

  static void writeAtomically(File file, String text) throws IOException {
    File tmp = new File(file.getPath() + ".tmp");
    Files.writeString(tmp.toPath(), text, StandardCharsets.UTF_8);
    Files.move(tmp.toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }

  static String one(Map<String, List<String>> opts, String name, String dflt) {
    List<String> v = opts.get(name);
    if (v == null || v.isEmpty()) {
      if (dflt == null) {
        throw new IllegalArgumentException("missing -" + name);
      }
      return dflt;
    }
    return v.get(v.size() - 1);
  }

  /** -name value pairs (repeatable); a flag followed by another -option or nothing is "true". */
  static Map<String, List<String>> parse(String[] args) {
    Map<String, List<String>> opts = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("-")) {
        throw new IllegalArgumentException("unexpected argument " + a);
      }
      String name = a.replaceFirst("^-+", "");
      String value = (i + 1 < args.length && !args[i + 1].startsWith("-")) ? args[++i] : "true";
      opts.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
    }
    return opts;
  }
}
