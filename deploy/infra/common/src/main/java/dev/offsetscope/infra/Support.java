package dev.offsetscope.infra;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Small helpers of the launcher: a JSON line writer and a recursive delete. */
final class Support {
  private Support() {}

  static void deleteTree(File f) throws IOException {
    if (!f.exists()) {
      return;
    }
    List<Path> all = new ArrayList<>();
    try (var walk = Files.walk(f.toPath())) {
      walk.forEach(all::add);
    }
    for (int i = all.size() - 1; i >= 0; i--) {
      Files.deleteIfExists(all.get(i));
    }
  }

  static double round(double s) {
    return Math.round(s * 100.0) / 100.0;
  }

  /** A JSON object: string keys; values are strings, numbers, booleans or nested maps. */
  static String json(Map<String, ?> m) {
    StringBuilder sb = new StringBuilder("{");
    boolean first = true;
    for (Map.Entry<String, ?> e : m.entrySet()) {
      if (!first) {
        sb.append(',');
      }
      first = false;
      sb.append(quote(e.getKey())).append(':');
      Object v = e.getValue();
      if (v instanceof Number || v instanceof Boolean) {
        sb.append(v);
      } else if (v instanceof Map) {
        @SuppressWarnings("unchecked")
        Map<String, ?> inner = (Map<String, ?>) v;
        sb.append(json(inner));
      } else {
        sb.append(quote(String.valueOf(v)));
      }
    }
    return sb.append('}').toString();
  }

  static String quote(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }

  /**
   * Exit (running the shutdown hooks) when standard input reaches its end: the process that
   * started the launcher holds the other end, so the launcher cannot outlive it.
   */
  static void exitOnStdinClose(String threadName) {
    Thread watcher = new Thread(() -> {
      try (InputStream in = System.in) {
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
          // only end of file matters
        }
      } catch (IOException e) {
        // a broken pipe means the same as end of file
      }
      System.exit(0);
    }, threadName);
    watcher.setDaemon(true);
    watcher.start();
  }
}
