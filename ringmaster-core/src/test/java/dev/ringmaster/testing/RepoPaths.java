package dev.ringmaster.testing;

import java.nio.file.Files;
import java.nio.file.Path;

/** Locates files of the repository from a test, whichever module directory the test runs in. */
public final class RepoPaths {
  private RepoPaths() {}

  /** The repository root: the nearest ancestor of the working directory with a {@code .ci} dir. */
  public static Path root() {
    Path p = Path.of("").toAbsolutePath();
    while (p != null) {
      if (Files.isDirectory(p.resolve(".ci")) && Files.exists(p.resolve("pom.xml"))) {
        return p;
      }
      p = p.getParent();
    }
    throw new IllegalStateException("repository root (with .ci/ and pom.xml) not found above cwd");
  }

  /** A path under the repository root that must exist. */
  public static Path require(String relative) {
    Path p = root().resolve(relative);
    if (!Files.exists(p)) {
      throw new IllegalStateException(
          p
              + " is missing; it is committed to the repository or made by scripts/fetch-test-data.sh");
    }
    return p;
  }
}
