package dev.ringmaster.model.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Oniguruma-to-Java regex translation and the Split pre-tokenizer behaviors. */
class TokenizerRegexTest {
  @Test
  void unicodeShorthandsAreUnicodeAware() {
    assertThat(OnigurumaRegex.translate("\\s+\\S"))
        .isEqualTo("\\p{IsWhite_Space}+\\P{IsWhite_Space}");
    // Java's \s would miss the ideographic and no-break spaces, Oniguruma's does not.
    assertThat(OnigurumaRegex.compile("^\\s+$").matcher("\u3000\u00a0 ").matches()).isTrue();
    assertThat(OnigurumaRegex.compile("\\d+").matcher("٣٤").matches()).isTrue();
    assertThat(OnigurumaRegex.compile("\\w+").matcher("naïve_日本").matches()).isTrue();
    assertThat(OnigurumaRegex.compile("\\h+").matcher("0aF").matches()).isTrue();
  }

  @Test
  void propertiesScriptsNegationAndPosixBrackets() {
    assertThat(OnigurumaRegex.translate("\\p{Lu}\\p{^L}\\P{N}")).isEqualTo("\\p{Lu}\\P{L}\\P{N}");
    assertThat(OnigurumaRegex.compile("\\p{Han}+").matcher("漢字").matches()).isTrue();
    assertThat(OnigurumaRegex.compile("[[:alpha:]]+").matcher("éa").matches()).isTrue();
    assertThat(OnigurumaRegex.compile("[^[:space:]]+").matcher("ab\u3000").lookingAt()).isTrue();
  }

  @Test
  void deepSeekClassesWithCjkRangesAndPossessiveForms() {
    Pattern cjk = OnigurumaRegex.compile("[一-龥぀-ゟ゠-ヿ]+");
    assertThat(cjk.matcher("漢字ひらがなカタカナ").matches()).isTrue();
    assertThat(cjk.matcher("한").matches()).isFalse();
    Pattern possessive = OnigurumaRegex.compile("\\p{L}++(?>\\p{N}*+)");
    assertThat(possessive.matcher("abc123").matches()).isTrue();
    // Escaped ']' and '[' inside a class stay literal.
    assertThat(OnigurumaRegex.compile("[\\[\\]]").matcher("]").matches()).isTrue();
    assertThat(OnigurumaRegex.compile("[]a]").matcher("]").matches()).isTrue();
  }

  @Test
  void anchorsAreLineAnchorsWithOnlyNewlineAsTerminator() {
    Pattern p = OnigurumaRegex.compile("^x$");
    assertThat(p.matcher("a\nx\nb").find()).isTrue();
    assertThat(p.matcher("a\rx\rb").find()).isFalse();
  }

  @Test
  void unsupportedSyntaxIsNamed() {
    assertThatThrownBy(() -> OnigurumaRegex.compile("a\\Kb")).hasMessageContaining("\\K");
    assertThatThrownBy(() -> OnigurumaRegex.compile("(?~abc)")).hasMessageContaining("absent");
    assertThatThrownBy(() -> OnigurumaRegex.compile("[[:nonsense:]]"))
        .hasMessageContaining("[:nonsense:]");
  }

  @Test
  void gpt2PatternSplitsLikeByteLevel() {
    RegexSplitter s = new RegexSplitter(ByteLevel.GPT2_PATTERN, SplitBehavior.ISOLATED, false);
    assertThat(s.split("I'm  fine, 123 ok\n\n"))
        .containsExactly("I", "'m", " ", " fine", ",", " 123", " ok", "\n\n");
  }

  @Test
  void splitBehaviors() {
    Pattern dash = Pattern.compile("-");
    String text = "the-final--countdown";
    assertThat(new RegexSplitter(dash, SplitBehavior.ISOLATED, false).split(text))
        .containsExactly("the", "-", "final", "-", "-", "countdown");
    assertThat(new RegexSplitter(dash, SplitBehavior.REMOVED, false).split(text))
        .containsExactly("the", "final", "countdown");
    assertThat(new RegexSplitter(dash, SplitBehavior.MERGED_WITH_PREVIOUS, false).split(text))
        .containsExactly("the-", "final-", "-", "countdown");
    assertThat(new RegexSplitter(dash, SplitBehavior.MERGED_WITH_NEXT, false).split(text))
        .containsExactly("the", "-final", "-", "-countdown");
    assertThat(new RegexSplitter(dash, SplitBehavior.CONTIGUOUS, false).split(text))
        .containsExactly("the", "-", "final", "--", "countdown");
    assertThat(new RegexSplitter(dash, SplitBehavior.REMOVED, true).split(text))
        .containsExactly("-", "-", "-");
    assertThat(new RegexSplitter(dash, SplitBehavior.ISOLATED, false).split(""))
        .isEqualTo(List.of());
  }
}
