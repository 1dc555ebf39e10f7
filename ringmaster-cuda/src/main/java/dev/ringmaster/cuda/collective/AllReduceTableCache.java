package dev.ringmaster.cuda.collective;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * The measured allreduce tables of this host, one JSON file per world size in {@code
 * ~/.cache/ringmaster/} ({@code $XDG_CACHE_HOME/ringmaster} when set). Each file records the key it
 * was measured under (GPU names, driver version, link matrix, world size, custom allreduce
 * settings); a file whose key differs from the current one is stale and is measured again.
 */
public final class AllReduceTableCache {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path dir;

  /** A cache in {@code dir}. */
  public AllReduceTableCache(Path dir) {
    this.dir = dir;
  }

  /** The default folder: {@code $XDG_CACHE_HOME/ringmaster} or {@code ~/.cache/ringmaster}. */
  public static AllReduceTableCache standard() {
    String xdg = System.getenv("XDG_CACHE_HOME");
    Path base =
        xdg != null && !xdg.isBlank()
            ? Path.of(xdg)
            : Path.of(System.getProperty("user.home"), ".cache");
    return new AllReduceTableCache(base.resolve("ringmaster"));
  }

  /**
   * A cache file's content.
   *
   * @param key what the table was measured under
   * @param table the chosen table
   * @param measurements the numbers it was chosen from
   * @param log the decision, one line per size
   */
  public record Entry(
      String key,
      DeviceAllReduceTable table,
      List<AllReduceRule.Measurement> measurements,
      List<String> log) {}

  /** The outcome of a lookup. */
  public sealed interface Lookup {}

  /** A cached table whose key matches. */
  public record Hit(Entry entry) implements Lookup {}

  /** No usable table; {@code reason} says why (absent, stale with what changed, unreadable). */
  public record Miss(String reason) implements Lookup {}

  /** The file for a world of {@code worldSize} GPUs. */
  public Path file(int worldSize) {
    return dir.resolve("allreduce-tp" + worldSize + ".json");
  }

  /** Looks up the table of {@code worldSize} GPUs measured under {@code key}. */
  public Lookup lookup(int worldSize, String key) {
    Path f = file(worldSize);
    if (!Files.isRegularFile(f)) {
      return new Miss("no cached table at " + f);
    }
    Entry e;
    try {
      e = JSON.readValue(f.toFile(), Entry.class);
    } catch (IOException | RuntimeException ex) {
      return new Miss("unreadable cache " + f + ": " + ex.getMessage());
    }
    if (!key.equals(e.key())) {
      return new Miss(
          "cached table at "
              + f
              + " is stale (GPUs, driver or topology changed): was ["
              + e.key()
              + "], now ["
              + key
              + "]");
    }
    return new Hit(e);
  }

  /** Stores an entry atomically (write then rename). */
  public void store(int worldSize, Entry entry) throws IOException {
    Files.createDirectories(dir);
    Path f = file(worldSize);
    Path tmp = Files.createTempFile(dir, "allreduce-", ".tmp");
    JSON.writerWithDefaultPrettyPrinter().writeValue(tmp.toFile(), entry);
    Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}
