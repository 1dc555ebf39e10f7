package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.tokenizer.Tokenizer;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ringmaster tokenize}: text to ids as JSON, or ids back to text with --decode. */
@Command(
    name = "tokenize",
    mixinStandardHelpOptions = true,
    description = "Print the token ids of a text as JSON (or, with --decode, the text of ids).")
final class TokenizeCommand implements Callable<Integer> {
  static final class Source {
    @Option(names = "--model", description = "Model directory holding tokenizer.json.")
    Path model;

    @Option(names = "--tokenizer", description = "A tokenizer.json file.")
    Path tokenizer;
  }

  @ArgGroup(exclusive = true)
  Source source;

  @Option(names = "--decode", description = "Decode a JSON list or comma-separated ids to text.")
  boolean decode;

  @Option(names = "--no-special", description = "Do not add BOS/EOS as the tokenizer would.")
  boolean noSpecial;

  @Parameters(index = "0", description = "Text to encode, or ids to decode.")
  String input;

  @Override
  public Integer call() throws Exception {
    Path path =
        source != null && source.tokenizer != null
            ? source.tokenizer
            : DefaultModel.resolve(source != null ? source.model : null);
    Tokenizer tok = Tokenizer.load(path);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    if (decode) {
      String s = input.trim();
      if (s.startsWith("[")) {
        s = s.substring(1, s.length() - (s.endsWith("]") ? 1 : 0));
      }
      String[] parts = s.isBlank() ? new String[0] : s.split("[,\\s]+");
      int[] ids = new int[parts.length];
      for (int i = 0; i < parts.length; i++) {
        try {
          ids[i] = Integer.parseInt(parts[i].trim());
        } catch (NumberFormatException e) {
          throw new UserError("--decode: '" + parts[i] + "' is not a token id");
        }
        if (ids[i] < 0 || ids[i] >= tok.vocabSize()) {
          throw new UserError(
              "--decode: token id "
                  + ids[i]
                  + " is outside the vocabulary (0.."
                  + (tok.vocabSize() - 1)
                  + ")");
        }
      }
      out.println(tok.decode(ids));
    } else {
      out.println(new ObjectMapper().writeValueAsString(tok.encode(input, !noSpecial)));
    }
    return 0;
  }
}
