package dev.offsetscope.infra;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * HDFS (1 NameNode, 1 DataNode) and, unless {@code -no-yarn}, YARN (1 ResourceManager with the
 * FifoScheduler, 1 NodeManager) in this JVM, on one loopback address.
 *
 * <pre>
 *   java -jar offsetscope-hadoop-launcher-0.1.0.jar [-work DIR] [-host 127.0.0.1]
 *        [-nn-port 0] [-rm-port 0] [-no-yarn] [-nm-memory-mb 8192] [-nm-vcores 8]
 *        [-exit-on-stdin-close]
 * </pre>
 *
 * Everything lives under the work folder DIR (default: the working directory): {@code dfs/}
 * (name and data dirs), {@code yarn/offsetscope/yarn-<n>/} (the NodeManager's local dirs and
 * container logs: MiniYARNCluster puts them under the {@code test.build.data} folder, which the
 * launcher sets to {@code DIR/yarn}),
 * {@code conf/} (core-site.xml, hdfs-site.xml, yarn-site.xml for clients: HADOOP_CONF_DIR),
 * {@code logs/hadoop.log} (every log line: the launcher's stdout carries only JSON lines).
 * These are wiped at start (a mini cluster always formats a new name node).
 *
 * When up, one JSON line {@code {"event":"ready",...}} goes to stdout (and {@code DIR/ready.json}).
 * It stops on SIGTERM/SIGINT (shutdown hook) or, with {@code -exit-on-stdin-close}, when its
 * standard input reaches end of file (the parent died or closed the pipe), and prints
 * {@code {"event":"stopped"}}. Exit code 0 after a clean stop, 1 if the start failed.
 */
public final class MiniHadoop {
  private final Map<String, String> opts;
  private final File work;
  private final String host;
  private MiniDFSCluster dfs;
  private MiniYARNCluster yarn;
  private final AtomicBoolean stopped = new AtomicBoolean(false);
  private final CountDownLatch done = new CountDownLatch(1);
  private final PrintStream out;

  private MiniHadoop(Map<String, String> opts, PrintStream out) {
    this.opts = opts;
    this.out = out;
    this.work = new File(opts.getOrDefault("work", "")).getAbsoluteFile();
    this.host = opts.getOrDefault("host", "127.0.0.1");
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = parse(args);
    File work = new File(opts.getOrDefault("work", "")).getAbsoluteFile();
    for (String name : new String[] {"dfs", "conf", "logs", "yarn", "tmp", "ready.json"}) {
      Support.deleteTree(new File(work, name));
    }
    // Logging first: reload4j reads log4j.properties (in this jar) at the first logger, and
    // that file writes to ${offsetscope.log.dir}/hadoop.log. Hadoop's own stdout chatter is
    // sent to stderr so that stdout carries only our JSON lines.
    File logs = new File(work, "logs");
    if (!logs.mkdirs()) {
      throw new IOException("cannot create " + logs);
    }
    System.setProperty("offsetscope.log.dir", logs.getPath());
    // MiniYARNCluster (and Hadoop's test helpers) put their folders under test.build.data,
    // by default ./target/test/data.
    System.setProperty("test.build.data", new File(work, "yarn").getPath());
    // Jersey and Guice log through java.util.logging to stderr at INFO; warnings are enough.
    java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    PrintStream jsonOut = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), true,
        StandardCharsets.UTF_8);
    System.setOut(System.err);
    MiniHadoop launcher = new MiniHadoop(opts, jsonOut);
    Runtime.getRuntime().addShutdownHook(new Thread(launcher::stop, "minihadoop-stop"));
    try {
      launcher.start();
    } catch (Throwable t) {
      jsonOut.println(Support.json(Map.of("event", "failed", "error", String.valueOf(t))));
      t.printStackTrace();
      launcher.stop();
      System.exit(1);
    }
    if (opts.containsKey("exit-on-stdin-close")) {
      Support.exitOnStdinClose("minihadoop-stdin");
    }
    launcher.done.await();
  }

  private void start() throws Exception {
    long t0 = System.nanoTime();
    File dfsDir = new File(work, "dfs");
    File confDir = new File(work, "conf");
    if (!confDir.mkdirs()) {
      throw new IOException("cannot create " + confDir);
    }

    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dfsDir.getPath());
    conf.set("hadoop.tmp.dir", new File(work, "tmp").getPath());
    conf.set("dfs.replication", "1");
    conf.setBoolean("dfs.permissions.enabled", true);
    // One data node: a pipeline can never replace a failed node; don't try (append, hflush).
    conf.set("dfs.client.block.write.replace-datanode-on-failure.enable", "false");
    conf.set("dfs.namenode.http-address", host + ":0");
    conf.set("dfs.namenode.rpc-bind-host", host);
    conf.set("dfs.datanode.address", host + ":0");
    conf.set("dfs.datanode.http.address", host + ":0");
    conf.set("dfs.datanode.ipc.address", host + ":0");
    // Small machine: fewer handler threads.
    conf.setInt("dfs.namenode.handler.count", 4);
    conf.setInt("dfs.datanode.handler.count", 4);

    dfs = new MiniDFSCluster.Builder(conf)
        .numDataNodes(1)
        .nameNodePort(intOpt("nn-port", 0))
        .nameNodeHttpPort(0)
        .checkDataNodeAddrConfig(true)
        .format(true)
        .build();
    dfs.waitActive();
    String nnUri = "hdfs://" + host + ":" + dfs.getNameNodePort();
    conf.set("fs.defaultFS", nnUri);
    prepareHdfs(conf);
    double dfsSeconds = (System.nanoTime() - t0) / 1e9;

    Map<String, String> core = new LinkedHashMap<>();
    core.put("fs.defaultFS", nnUri);
    core.put("hadoop.security.authentication", "simple");
    Map<String, String> hdfs = new LinkedHashMap<>();
    hdfs.put("dfs.replication", "1");
    hdfs.put("dfs.client.block.write.replace-datanode-on-failure.enable", "false");
    hdfs.put("dfs.namenode.rpc-address", host + ":" + dfs.getNameNodePort());
    hdfs.put("dfs.namenode.http-address", host + ":" + dfs.getNameNode().getHttpAddress().getPort());
    writeSite(new File(confDir, "core-site.xml"), core);
    writeSite(new File(confDir, "hdfs-site.xml"), hdfs);

    Map<String, Object> ready = new LinkedHashMap<>();
    ready.put("event", "ready");
    ready.put("pid", ProcessHandle.current().pid());
    ready.put("namenode", nnUri);
    ready.put("namenode_http", "http://" + hdfs.get("dfs.namenode.http-address"));
    ready.put("conf_dir", confDir.getPath());
    ready.put("work_dir", work.getPath());
    ready.put("log_file", new File(work, "logs/hadoop.log").getPath());
    ready.put("hdfs_start_s", Support.round(dfsSeconds));

    if (!opts.containsKey("no-yarn")) {
      Map<String, String> yarnSite = startYarn(conf);
      writeSite(new File(confDir, "yarn-site.xml"), yarnSite);
      ready.put("resourcemanager", yarnSite.get(YarnConfiguration.RM_ADDRESS));
      ready.put("resourcemanager_http", "http://" + yarnSite.get(YarnConfiguration.RM_WEBAPP_ADDRESS));
      Configuration nmConf = yarn.getNodeManager(0).getConfig();
      ready.put("container_log_dir", nmConf.get(YarnConfiguration.NM_LOG_DIRS));
      ready.put("nm_local_dir", nmConf.get(YarnConfiguration.NM_LOCAL_DIRS));
      ready.put("nm_memory_mb", intOpt("nm-memory-mb", 8192));
      String javaHome = System.getenv("JAVA_HOME");
      ready.put("container_java_home", javaHome == null ? "" : javaHome);
      String localIp = System.getenv("SPARK_LOCAL_IP");
      ready.put("container_spark_local_ip", localIp == null ? "" : localIp);
      if (localIp == null || localIp.isEmpty()) {
        System.err.println("MiniHadoop: SPARK_LOCAL_IP is not set in this process's environment;"
            + " Spark in YARN containers will bind to a non-loopback interface unless the"
            + " application sets it (spark.yarn.appMasterEnv.SPARK_LOCAL_IP,"
            + " spark.executorEnv.SPARK_LOCAL_IP)");
      }
      if (javaHome == null || javaHome.isEmpty()) {
        System.err.println("MiniHadoop: JAVA_HOME is not set in this process's environment;"
            + " YARN containers will have none unless the application sets it"
            + " (spark.yarn.appMasterEnv.JAVA_HOME, spark.executorEnv.JAVA_HOME), and Spark's"
            + " $JAVA_HOME/bin/java becomes /bin/java");
      }
    } else {
      writeSite(new File(confDir, "yarn-site.xml"), new LinkedHashMap<>());
    }
    ready.put("start_s", Support.round((System.nanoTime() - t0) / 1e9));
    String line = Support.json(ready);
    File readyFile = new File(work, "ready.json");
    File tmp = new File(work, "ready.json.tmp");
    Files.writeString(tmp.toPath(), line + "\n", StandardCharsets.UTF_8);
    Files.move(tmp.toPath(), readyFile.toPath(), StandardCopyOption.ATOMIC_MOVE);
    out.println(line);
  }

  /** World-writable /tmp (sticky) and a home for the user running the cluster. */
  private void prepareHdfs(Configuration conf) throws IOException {
    try (FileSystem fs = FileSystem.newInstance(conf)) {
      Path tmp = new Path("/tmp");
      fs.mkdirs(tmp);
      fs.setPermission(tmp, new FsPermission((short) 01777));
      String user = System.getProperty("user.name");
      Path home = new Path("/user/" + user);
      fs.mkdirs(home);
      fs.setPermission(new Path("/user"), new FsPermission((short) 0755));
    }
  }

  private Map<String, String> startYarn(Configuration base) throws Exception {
    YarnConfiguration conf = new YarnConfiguration(base);
    int nmMemory = intOpt("nm-memory-mb", 8192);
    int nmVcores = intOpt("nm-vcores", 8);
    Map<String, String> site = new LinkedHashMap<>();
    // Fixed ports on our loopback host instead of the mini cluster's <hostname>:0.
    int rmPort = intOpt("rm-port", 0);
    site.put(YarnConfiguration.RM_HOSTNAME, host);
    site.put(YarnConfiguration.RM_ADDRESS, host + ":" + (rmPort == 0 ? freePort() : rmPort));
    site.put(YarnConfiguration.RM_SCHEDULER_ADDRESS, host + ":" + freePort());
    site.put(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS, host + ":" + freePort());
    site.put(YarnConfiguration.RM_ADMIN_ADDRESS, host + ":" + freePort());
    site.put(YarnConfiguration.RM_WEBAPP_ADDRESS, host + ":" + freePort());
    site.put("yarn.log-aggregation-enable", "false");
    for (Map.Entry<String, String> e : site.entrySet()) {
      conf.set(e.getKey(), e.getValue());
    }
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, true);
    conf.set(YarnConfiguration.RM_SCHEDULER,
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    conf.setInt(YarnConfiguration.NM_PMEM_MB, nmMemory);
    conf.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", nmMemory);
    conf.setInt(YarnConfiguration.NM_VCORES, nmVcores);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, nmMemory);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, nmVcores);
    // A small machine: no memory policing, and no "unhealthy node" because a disk is 90% full.
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_CONTROL_RESOURCE_MONITORING, false);
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    conf.setLong(YarnConfiguration.NM_MIN_PER_DISK_FREE_SPACE_MB, 0L);
    // A failed application master is not retried: tests see the failure at once.
    conf.setInt(YarnConfiguration.RM_AM_MAX_ATTEMPTS, intOpt("am-max-attempts", 1));
    // JAVA_HOME in containers: not forced through yarn.nodemanager.admin-env, which YARN
    // *appends* (with ':') to a JAVA_HOME the application sets (spark.yarn.appMasterEnv.
    // JAVA_HOME gives "/jdk:/jdk/bin/java: No such file or directory", exit 127). JAVA_HOME is in
    // yarn.nodemanager.env-whitelist, so a container that sets none inherits this JVM's: start
    // the launcher with JAVA_HOME exported (the ready line reports it), or set it per app.
    // Keep a finished container's working dir a while (launch_container.sh, localized files).
    // SPARK_LOCAL_IP joins the variables a container inherits from this JVM when the
    // application sets none: Spark in a container otherwise sees that the host name resolves to
    // 127.0.0.1 and binds to the first non-loopback interface instead ("Your hostname, vm,
    // resolves to a loopback address: 127.0.0.1; using 192.0.2.2 instead"). Start the launcher
    // with SPARK_LOCAL_IP=<host> exported (the ready line reports it).
    conf.set(YarnConfiguration.NM_ENV_WHITELIST,
        YarnConfiguration.DEFAULT_NM_ENV_WHITELIST + ",SPARK_LOCAL_IP");
    conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 600);
    conf.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, false);

    yarn = new MiniYARNCluster("offsetscope", 1, 1, 1, 1);
    yarn.init(conf);
    yarn.start();
    if (!yarn.waitForNodeManagersToConnect(60_000)) {
      throw new IOException("the NodeManager did not register with the ResourceManager in 60 s");
    }
    // (The live configuration names the RM "localhost:<port>": the RM rewrites its addresses
    // with the name its bound address resolves to. Clients get the address we chose.)
    site.put(YarnConfiguration.RM_SCHEDULER, conf.get(YarnConfiguration.RM_SCHEDULER));
    return site;
  }

  private void stop() {
    if (!stopped.compareAndSet(false, true)) {
      return;
    }
    try {
      if (yarn != null) {
        yarn.stop();
      }
    } catch (Throwable t) {
      t.printStackTrace();
    }
    try {
      if (dfs != null) {
        dfs.shutdown();
      }
    } catch (Throwable t) {
      t.printStackTrace();
    }
    out.println(Support.json(Map.of("event", "stopped")));
    out.flush();
    done.countDown();
  }

  // ------------------------------------------------------------------ helpers

  static void writeSite(File file, Map<String, String> props) throws IOException {
    Configuration site = new Configuration(false);
    for (Map.Entry<String, String> e : props.entrySet()) {
      site.set(e.getKey(), e.getValue(), "offsetscope MiniHadoop");
    }
    File tmp = new File(file.getPath() + ".tmp");
    try (OutputStream os = new FileOutputStream(tmp)) {
      site.writeXml(os);
    }
    Files.move(tmp.toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(false);
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    }
  }

  private int intOpt(String name, int dflt) {
    String v = opts.get(name);
    return v == null ? dflt : Integer.parseInt(v);
  }

  /** -name value pairs; a flag followed by another -option (or nothing) is "true". */
  static Map<String, String> parse(String[] args) {
    Map<String, String> opts = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("-")) {
        throw new IllegalArgumentException("unexpected argument " + a);
      }
      String name = a.replaceFirst("^-+", "");
      if (i + 1 < args.length && !args[i + 1].startsWith("-")) {
        opts.put(name, args[++i]);
      } else {
        opts.put(name, "true");
      }
    }
    return opts;
  }

}
