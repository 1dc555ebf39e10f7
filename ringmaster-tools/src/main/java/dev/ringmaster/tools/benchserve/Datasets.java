package dev.ringmaster.tools.benchserve;

import dev.ringmaster.model.tokenizer.Tokenizer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * The benchmark's prompts, made as sglang.bench_serving makes them: {@code random} (random token
 * ids decoded to text, or a ShareGPT file's text repeated or cut to length when {@code
 * --dataset-path} is given), {@code random-ids} (the ids themselves), {@code sharegpt} and {@code
 * generated-shared-prefix}. The same seed gives the same prompts.
 */
public final class Datasets {
  private Datasets() {}

  /**
   * The rows of a dataset.
   *
   * @param tokenizer counts and makes tokens; may be null only for sharegpt with a fixed output
   *     length (prompt tokens are then counted by the server)
   */
  public static List<DatasetRow> make(
      BenchServeConfig.Dataset spec, Tokenizer tokenizer, long seed) {
    Random random = new Random(seed);
    if (tokenizer == null
        && !(spec.name().equals("sharegpt") && spec.sharegptOutputLen() != null)) {
      throw new BenchServeException(
          "--dataset-name "
              + spec.name()
              + " needs a tokenizer to make and count tokens: pass --tokenizer DIR (a directory"
              + " holding tokenizer.json), or --model DIR"
              + (spec.name().equals("sharegpt") ? ", or a fixed --sharegpt-output-len" : ""));
    }
    return switch (spec.name()) {
      case "random", "random-ids" -> random(spec, tokenizer, random);
      case "sharegpt" -> shareGpt(spec, tokenizer, random);
      case "generated-shared-prefix" -> sharedPrefix(spec.gsp(), tokenizer, random);
      default -> throw new BenchServeException("--dataset-name " + spec.name() + " is unknown");
    };
  }

  /** {@code n} lengths uniform in [max(1, full x ratio), full]. */
  static int[] randomLens(int full, double ratio, int n, Random random) {
    int lo = Math.max((int) (full * ratio), 1);
    return IntStream.range(0, n).map(i -> lo + random.nextInt(full - lo + 1)).toArray();
  }

  private static List<DatasetRow> random(
      BenchServeConfig.Dataset spec, Tokenizer tok, Random random) {
    int n = spec.numPrompts();
    int[] inLens = randomLens(spec.randomInputLen(), spec.randomRangeRatio(), n, random);
    int[] outLens = randomLens(spec.randomOutputLen(), spec.randomRangeRatio(), n, random);
    boolean asIds = spec.name().equals("random-ids");
    List<int[]> source = null;
    if (spec.path() != null) {
      // As sglang does: real text's tokens, repeated or cut to each length.
      source = new ArrayList<>();
      List<ShareGptFile.Pair> pairs = new ArrayList<>(ShareGptFile.read(spec.path()));
      Collections.shuffle(pairs, random);
      for (ShareGptFile.Pair p : pairs) {
        int[] ids = tok.encode(p.prompt(), false);
        if (ids.length > 0) {
          source.add(ids);
        }
      }
      if (source.isEmpty()) {
        throw new BenchServeException(
            "--dataset-path " + spec.path() + ": no conversation with a non-empty first turn");
      }
    }
    int[] pool = source == null ? tokenPool(tok) : null;
    List<DatasetRow> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int[] ids = new int[inLens[i]];
      if (source != null) {
        int[] src = source.get(i % source.size());
        for (int j = 0; j < ids.length; j++) {
          ids[j] = src[j % src.length];
        }
      } else {
        for (int j = 0; j < ids.length; j++) {
          ids[j] = pool[random.nextInt(pool.length)];
        }
      }
      rows.add(
          asIds
              ? DatasetRow.ids(ids, outLens[i])
              : DatasetRow.text(tok.decode(ids), inLens[i], outLens[i]));
    }
    return rows;
  }

  private static List<DatasetRow> shareGpt(
      BenchServeConfig.Dataset spec, Tokenizer tok, Random random) {
    List<ShareGptFile.Pair> pairs = new ArrayList<>(ShareGptFile.read(spec.path()));
    Collections.shuffle(pairs, random);
    List<DatasetRow> rows = new ArrayList<>();
    for (ShareGptFile.Pair p : pairs) {
      if (rows.size() == spec.numPrompts()) {
        break;
      }
      int promptLen = tok == null ? -1 : tok.encode(p.prompt()).length;
      int outputLen =
          spec.sharegptOutputLen() != null
              ? spec.sharegptOutputLen()
              : tok.encode(p.completion(), false).length;
      if ((tok != null && promptLen < 2) || outputLen < 2 || p.prompt().isEmpty()) {
        continue; // too short to time
      }
      if (spec.sharegptContextLen() != null
          && promptLen >= 0
          && promptLen + outputLen > spec.sharegptContextLen()) {
        continue;
      }
      rows.add(DatasetRow.text(p.prompt(), promptLen, outputLen));
    }
    if (rows.isEmpty()) {
      throw new BenchServeException(
          "--dataset-path "
              + spec.path()
              + ": no usable conversation (each needs two turns, a prompt and a reply of at least"
              + " 2 tokens)");
    }
    return rows;
  }

  /**
   * Groups of prompts that share a system prompt, as token ids (like {@code random-ids}): text
   * would be re-tokenized and could merge tokens across the prefix's end, so the requests would not
   * share the exact prefix a prefix cache keys on.
   */
  private static List<DatasetRow> sharedPrefix(
      BenchServeConfig.SharedPrefix g, Tokenizer tok, Random random) {
    int total = g.numGroups() * g.promptsPerGroup();
    int[] sysLens = randomLens(g.systemPromptLen(), g.rangeRatio(), g.numGroups(), random);
    int[] qLens = randomLens(g.questionLen(), g.rangeRatio(), total, random);
    int[] outLens = randomLens(g.outputLen(), g.rangeRatio(), total, random);
    int[] pool = tokenPool(tok);
    List<int[]> systems = new ArrayList<>();
    for (int len : sysLens) {
      systems.add(randomIds(pool, len, random));
    }
    List<DatasetRow> rows = new ArrayList<>(total);
    for (int i = 0; i < total; i++) {
      int[] system = systems.get(i / g.promptsPerGroup());
      int[] question = randomIds(pool, qLens[i], random);
      int[] prompt = java.util.Arrays.copyOf(system, system.length + question.length);
      System.arraycopy(question, 0, prompt, system.length, question.length);
      rows.add(DatasetRow.ids(prompt, outLens[i]));
    }
    Collections.shuffle(rows, random);
    return rows;
  }

  private static int[] randomIds(int[] pool, int len, Random random) {
    int[] ids = new int[len];
    for (int j = 0; j < len; j++) {
      ids[j] = pool[random.nextInt(pool.length)];
    }
    return ids;
  }

  private static String randomText(Tokenizer tok, int[] pool, int len, Random random) {
    int[] ids = new int[len];
    for (int j = 0; j < len; j++) {
      ids[j] = pool[random.nextInt(pool.length)];
    }
    return tok.decode(ids);
  }

  /**
   * The ids random prompts draw from: every assigned id but special ones (an end-of-sequence or
   * chat-role token inside a prompt changes what is measured).
   */
  static int[] tokenPool(Tokenizer tok) {
    int[] pool =
        IntStream.range(0, tok.vocabSize())
            .filter(id -> tok.idToToken(id) != null && !tok.isSpecial(id))
            .toArray();
    if (pool.length == 0) {
      throw new BenchServeException("the tokenizer has no ordinary tokens to make prompts from");
    }
    return pool;
  }
}
