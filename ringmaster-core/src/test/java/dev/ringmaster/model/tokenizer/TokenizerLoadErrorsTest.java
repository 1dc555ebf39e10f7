package dev.ringmaster.model.tokenizer;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Loading failures name the file and say what is wrong. */
class TokenizerLoadErrorsTest {
  @TempDir Path dir;

  private static final String MINIMAL_MODEL =
      "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
          + " \"merges\": [\"a b\"]}";

  @Test
  void missingFile() {
    Path missing = dir.resolve("nowhere");
    assertThatThrownBy(() -> Tokenizer.load(missing))
        .isInstanceOf(TokenizerLoadException.class)
        .hasMessageContaining(missing.toString())
        .hasMessageContaining("file not found");
    assertThatThrownBy(() -> Tokenizer.load(dir))
        .isInstanceOf(TokenizerLoadException.class)
        .hasMessageContaining(dir.resolve("tokenizer.json").toString())
        .hasMessageContaining("file not found");
  }

  @Test
  void malformedJson() throws IOException {
    Path file = write("tokenizer.json", "{\"model\": {\"type\": \"BPE\",, }");
    assertThatThrownBy(() -> Tokenizer.load(dir))
        .isInstanceOf(TokenizerLoadException.class)
        .hasMessageContaining(file.toString())
        .hasMessageContaining("malformed JSON");
  }

  @Test
  void malformedTokenizerConfig() throws IOException {
    write("tokenizer.json", "{" + MINIMAL_MODEL + "}");
    Path config = write("tokenizer_config.json", "{not json");
    assertThatThrownBy(() -> Tokenizer.load(dir))
        .isInstanceOf(TokenizerLoadException.class)
        .hasMessageContaining(config.toString())
        .hasMessageContaining("malformed JSON");
  }

  @Test
  void unsupportedModelType() throws IOException {
    Path file =
        write(
            "tokenizer.json",
            "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}, \"unk_token\": \"a\"}}");
    assertThatThrownBy(() -> Tokenizer.load(file))
        .isInstanceOf(TokenizerLoadException.class)
        .hasMessageContaining(file.toString())
        .hasMessageContaining("unsupported model type 'WordPiece'");
  }

  @Test
  void unsupportedNormalizer() throws IOException {
    Path file =
        write(
            "tokenizer.json",
            "{\"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"\"}, "
                + MINIMAL_MODEL
                + "}");
    assertThatThrownBy(() -> Tokenizer.load(file))
        .hasMessageContaining(file.toString())
        .hasMessageContaining("unsupported normalizer type 'Precompiled'");
  }

  @Test
  void unsupportedPreTokenizerAndDecoder() throws IOException {
    Path pre =
        write(
            "tokenizer.json",
            "{\"pre_tokenizer\": {\"type\": \"Metaspace\"}, " + MINIMAL_MODEL + "}");
    assertThatThrownBy(() -> Tokenizer.load(pre))
        .hasMessageContaining("unsupported pre_tokenizer type 'Metaspace'");
    Path dec =
        write("tokenizer.json", "{\"decoder\": {\"type\": \"WordPiece\"}, " + MINIMAL_MODEL + "}");
    assertThatThrownBy(() -> Tokenizer.load(dec))
        .hasMessageContaining("unsupported decoder type 'WordPiece'");
  }

  @Test
  void mergeWithUnknownToken() throws IOException {
    Path file =
        write(
            "tokenizer.json",
            "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [[\"a\", \"z\"]]}}");
    assertThatThrownBy(() -> Tokenizer.load(file))
        .hasMessageContaining(file.toString())
        .hasMessageContaining("merge #0");
  }

  private Path write(String name, String content) throws IOException {
    return Files.writeString(dir.resolve(name), content);
  }
}
