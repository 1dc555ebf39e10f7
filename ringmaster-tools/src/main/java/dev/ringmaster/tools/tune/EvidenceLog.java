package dev.ringmaster.tools.tune;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The evidence file: one JSON object per trial (snake_case {@link TrialResult}), appended and
 * forced to disk as each trial ends, so an interrupted tune keeps every finished trial and a
 * resumed one skips them. A torn last line (the process killed mid-write) is ignored on reading.
 */
public final class EvidenceLog {
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  private final Path file;

  /** The log at {@code file}. */
  public EvidenceLog(Path file) {
    this.file = file;
  }

  /** Its path. */
  public Path file() {
    return file;
  }

  /** Every complete record, in file order; none when the file does not exist. */
  public List<TrialResult> read() {
    List<TrialResult> out = new ArrayList<>();
    if (!Files.isRegularFile(file)) {
      return out;
    }
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the evidence file " + file, e);
    }
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty()) {
        continue;
      }
      try {
        out.add(JSON.readValue(line, TrialResult.class));
      } catch (IOException e) {
        if (i < lines.size() - 1) {
          throw new IllegalArgumentException(
              file + " line " + (i + 1) + " is not a trial record: " + e.getMessage(), e);
        }
      }
    }
    return out;
  }

  /** Appends one record and forces it to disk. */
  public void append(TrialResult r) {
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      byte[] line = (JSON.writeValueAsString(r) + "\n").getBytes(StandardCharsets.UTF_8);
      try (var ch =
          java.nio.channels.FileChannel.open(
              file,
              StandardOpenOption.CREATE,
              StandardOpenOption.APPEND,
              StandardOpenOption.WRITE)) {
        ch.write(java.nio.ByteBuffer.wrap(line));
        ch.force(true);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the evidence file " + file, e);
    }
  }
}
