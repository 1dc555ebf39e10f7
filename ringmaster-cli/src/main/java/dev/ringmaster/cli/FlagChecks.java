package dev.ringmaster.cli;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Checks of flag values that run before a model loads, so that a mistake costs no loading time:
 * each failure is a {@link UserError} (one line, exit status 2) naming the flag and the value.
 */
final class FlagChecks {
  private FlagChecks() {}

  /** {@code value >= min}. */
  static void atLeast(String flag, long value, long min) {
    if (value < min) {
      throw new UserError(flag + " must be at least " + min + ", got " + value);
    }
  }

  /** {@code value >= min} where the flag was given. */
  static void atLeast(String flag, Integer value, long min) {
    if (value != null) {
      atLeast(flag, value.longValue(), min);
    }
  }

  /** A TCP port: 0 (any free port) to 65535. */
  static void port(int port) {
    if (port < 0 || port > 65535) {
      throw new UserError("--port must be between 0 and 65535 (0 picks a free port), got " + port);
    }
  }

  /** A sampling temperature: finite and not negative (0 = greedy). */
  static void temperature(Double t) {
    if (t != null && !(t >= 0 && Double.isFinite(t))) {
      throw new UserError("--temperature must be 0 (greedy) or more, got " + t);
    }
  }

  /** A nucleus mass in (0, 1]. */
  static void topP(Double p) {
    if (p != null && !(p > 0 && p <= 1)) {
      throw new UserError("--top-p must be in (0, 1], got " + p);
    }
  }

  /** A share in (0, 1]. */
  static void fraction(String flag, Double f) {
    if (f != null && !(f > 0 && f <= 1)) {
      throw new UserError(flag + " must be in (0, 1], got " + f);
    }
  }

  /**
   * That the server can listen on {@code host:port}: binds and releases it, so a port in use is
   * reported at once and by name rather than after the model has loaded.
   */
  static void portFree(String host, int port) {
    if (port == 0) {
      return;
    }
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getByName(host), port));
    } catch (IOException e) {
      throw new UserError(
          "cannot listen on "
              + host
              + ":"
              + port
              + " ("
              + e.getMessage()
              + "): is another server using port "
              + port
              + "? Stop it or pass another --port");
    }
  }

  /** That {@code file} can be written: its folder exists and is writable, and it is no folder. */
  static void writableFile(String flag, Path file) {
    if (file == null) {
      return;
    }
    Path abs = file.toAbsolutePath();
    Path dir = abs.getParent();
    if (Files.isDirectory(abs)) {
      throw new UserError(flag + " " + file + " is a directory; give a file name");
    }
    if (dir == null || !Files.isDirectory(dir)) {
      throw new UserError(flag + " " + file + ": the directory " + dir + " does not exist");
    }
    if (!Files.isWritable(dir) || (Files.exists(abs) && !Files.isWritable(abs))) {
      throw new UserError(flag + " " + file + " cannot be written (permission denied)");
    }
  }

  /**
   * That a prompt plus its new tokens fit the model's context (from config.json, cheap to read).
   */
  static void fitsContext(Path modelDir, String what, long tokens) {
    int context;
    try {
      context =
          dev.ringmaster.model.config.ModelConfigParser.parse(modelDir).maxPositionEmbeddings();
    } catch (RuntimeException e) {
      return; // an unreadable config is reported by the loader, with its own message
    }
    if (tokens > context) {
      throw new UserError(
          what + " is " + tokens + " tokens, more than the model's context of " + context);
    }
  }
}
