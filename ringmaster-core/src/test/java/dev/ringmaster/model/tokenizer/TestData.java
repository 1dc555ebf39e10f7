package dev.ringmaster.model.tokenizer;

import static org.assertj.core.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;

/** Locates test data: committed fixtures and the fetched (uncommitted) DeepSeek-V3 tokenizer. */
final class TestData {
  private TestData() {}

  /** The repository root: the first directory upwards that holds scripts/fetch-test-data.sh. */
  static Path repoRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("scripts/fetch-test-data.sh"))) {
        return p;
      }
    }
    return fail(
        "cannot find the repository root (no scripts/fetch-test-data.sh above %s)",
        Path.of("").toAbsolutePath());
  }

  /** The DeepSeek-V3 tokenizer directory; fails (never skips) when it has not been fetched. */
  static Path deepSeekV3Dir() {
    Path dir = repoRoot().resolve(".cache/deepseek-v3-tokenizer");
    if (!Files.isRegularFile(dir.resolve("tokenizer.json"))) {
      fail(
          "%s is missing: run scripts/fetch-test-data.sh to download it",
          dir.resolve("tokenizer.json"));
    }
    return dir;
  }

  static Path fixture(String name) {
    Path p = repoRoot().resolve("fixtures/tokenizer").resolve(name);
    if (!Files.isRegularFile(p)) {
      fail("%s is missing: regenerate it with scripts/make_tokenizer_reference.py", p);
    }
    return p;
  }

  private static Tokenizer deepSeek;

  /** The DeepSeek-V3 tokenizer, loaded once per test JVM (it takes a moment to read). */
  static synchronized Tokenizer deepSeekV3() {
    if (deepSeek == null) {
      deepSeek = Tokenizer.load(deepSeekV3Dir());
    }
    return deepSeek;
  }
}
