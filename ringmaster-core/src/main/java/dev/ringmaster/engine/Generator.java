package dev.ringmaster.engine;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.util.HashSet;
import java.util.Set;
import java.util.function.IntPredicate;

/**
 * Generates one sequence on the CPU engine: one prefill forward over the prompt, then one decode
 * step per token using the KV cache. Each new token is handed to a listener as soon as it exists
 * (streaming); the listener may return false to stop. An optional {@link StepObserver} sees each
 * step's logits and may replace the token fed next (teacher forcing).
 */
public final class Generator {
  private final LanguageModel model;

  /** A generator over a loaded model. */
  public Generator(LanguageModel model) {
    this.model = model;
  }

  /**
   * Generates from {@code prompt}.
   *
   * @param prompt prompt token ids (at least one)
   * @param params sampling and stopping
   * @param eosIds end-of-sequence tokens (ignored with {@code ignoreEos})
   * @param onToken called with each new token; returning false stops generation
   */
  public GenerationResult generate(
      int[] prompt, SamplingParams params, int[] eosIds, IntPredicate onToken) {
    return generate(prompt, params, eosIds, onToken, StepObserver.NONE);
  }

  /**
   * Generates from {@code prompt}, showing every step's logits to {@code observer}, whose returned
   * token is the one emitted (to {@code onToken} and in the result), checked against the stop
   * tokens, and fed to the next step.
   *
   * @param prompt prompt token ids (at least one)
   * @param params sampling and stopping
   * @param eosIds end-of-sequence tokens (ignored with {@code ignoreEos})
   * @param onToken called with each new token; returning false stops generation
   * @param observer sees each step's logits and the sampled token, returns the token to use
   */
  public GenerationResult generate(
      int[] prompt,
      SamplingParams params,
      int[] eosIds,
      IntPredicate onToken,
      StepObserver observer) {
    int vocab = model.config().vocabSize();
    if (prompt.length == 0) {
      throw new IllegalArgumentException("the prompt is empty: give at least one token");
    }
    for (int id : prompt) {
      if (id < 0 || id >= vocab) {
        throw new IllegalArgumentException(
            "prompt token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
    }
    int maxLen = model.config().maxPositionEmbeddings();
    if (prompt.length + params.maxNewTokens() > maxLen) {
      throw new IllegalArgumentException(
          "prompt ("
              + prompt.length
              + " tokens) plus max new tokens ("
              + params.maxNewTokens()
              + ") exceeds the model's context of "
              + maxLen
              + " tokens");
    }
    Set<Integer> stops = new HashSet<>(params.stopTokenIds());
    if (!params.ignoreEos()) {
      for (int e : eosIds) {
        stops.add(e);
      }
    }
    Sampler sampler = new Sampler(params, prompt);
    int[] out = new int[params.maxNewTokens()];
    int produced = 0;
    String finish = "length";
    if (params.maxNewTokens() == 0) {
      return new GenerationResult(prompt, new int[0], finish, 0, 0);
    }
    KvCache cache = model.newCache();
    long t0 = System.nanoTime();
    long t1;
    long t2;
    // Closed on every exit: an observer (or its forced token) may throw mid-run, and a GPU cache
    // holds blocks of a shared pool.
    try {
      // Only the last prompt position's logits are needed (a GPU model copies just that row back).
      float[] logits =
          model.forward(
              prompt,
              BatchLayout.single(prompt.length, 0),
              new KvCache[] {cache},
              new int[] {prompt.length - 1});
      int next = chosen(observer, 0, logits, sampler.sample(logits, 0, vocab), vocab);
      t1 = System.nanoTime();
      while (true) {
        sampler.accept(next);
        out[produced++] = next;
        boolean keepGoing = onToken.test(next);
        if (stops.contains(next)) {
          finish = "stop";
          break;
        }
        if (!keepGoing || produced == params.maxNewTokens()) {
          break;
        }
        logits = model.forwardAll(new int[] {next}, cache);
        next = chosen(observer, produced, logits, sampler.sample(logits, 0, vocab), vocab);
      }
      t2 = System.nanoTime();
    } finally {
      cache.close();
    }
    return new GenerationResult(
        prompt, java.util.Arrays.copyOf(out, produced), finish, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
  }

  private static int chosen(
      StepObserver observer, int step, float[] logits, int sampled, int vocab) {
    int id = observer.onStep(step, logits, sampled);
    if (id < 0 || id >= vocab) {
      throw new IllegalArgumentException(
          "token id "
              + id
              + " chosen at step "
              + step
              + " is outside the vocabulary (0.."
              + (vocab - 1)
              + ")");
    }
    return id;
  }
}
