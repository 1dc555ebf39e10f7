package dev.ringmaster.model.multinode;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * What must be the same on every node for their ranks to compute one model: the model's {@code
 * config.json}, its weights' tensor names, shapes and dtypes (the safetensors headers: cheap to
 * read, and they change whenever the checkpoint does in any way that matters for the split), and
 * the flags that shape the ranks (parallel layout, device, allreduce...). Nodes exchange it when
 * they meet and node 0 refuses a node whose fingerprint differs, naming each entry that differs.
 */
public final class Fingerprint {
  /** Largest safetensors header read (the format allows up to 100 MB). */
  private static final long MAX_HEADER = 100L << 20;

  private Fingerprint() {}

  /**
   * The fingerprint of the model in {@code dir} run with {@code settings} (flag name to value, in a
   * stable order).
   */
  public static Map<String, String> of(Path dir, Map<String, String> settings) {
    Map<String, String> f = new LinkedHashMap<>();
    f.put("model config.json (sha-256)", sha256(List.of(dir.resolve("config.json")), false));
    f.put("model weights' tensor headers (sha-256)", sha256(weightFiles(dir), true));
    f.putAll(settings);
    return f;
  }

  /**
   * Each entry on which {@code theirs} (node {@code node}) differs from {@code ours} (node 0), as
   * "key: A on node 0, B on node k"; empty when they agree.
   */
  public static List<String> differences(
      Map<String, String> ours, Map<String, String> theirs, int node) {
    List<String> out = new ArrayList<>();
    TreeSet<String> keys = new TreeSet<>(ours.keySet());
    keys.addAll(theirs.keySet());
    for (String k : keys) {
      String a = ours.getOrDefault(k, "(none)");
      String b = theirs.getOrDefault(k, "(none)");
      if (!a.equals(b)) {
        out.add(k + ": " + a + " on node 0, " + b + " on node " + node);
      }
    }
    return out;
  }

  private static List<Path> weightFiles(Path dir) {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
  }

  /** Hex SHA-256 (first 16 digits) of the files, or of their safetensors headers only. */
  private static String sha256(List<Path> files, boolean headersOnly) {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
    for (Path p : files) {
      md.update(p.getFileName().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
      try (InputStream in = Files.newInputStream(p)) {
        md.update(headersOnly ? header(p, in) : in.readAllBytes());
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + p, e);
      }
    }
    return HexFormat.of().formatHex(md.digest()).substring(0, 16);
  }

  private static byte[] header(Path p, InputStream in) throws IOException {
    byte[] len = in.readNBytes(8);
    if (len.length < 8) {
      throw new IOException(p + " is too short for a safetensors file");
    }
    long n = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getLong();
    if (n < 0 || n > MAX_HEADER) {
      throw new IOException(p + ": safetensors header length " + n + " out of range");
    }
    return in.readNBytes((int) n);
  }
}
