package dev.ringmaster.engine.bench;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One prompt shared by every sequence of a batch, as the radix cache shares a common prefix: it is
 * prefilled once, into the first sequence's cache, and its KV pages are attached to the others'
 * caches (on a GPU the same blocks, read by every sequence; on the CPU copies). A decode step then
 * attends over the whole context for every sequence, so a batch of long contexts is measured
 * without prefilling each sequence (32 x 128k tokens would take minutes).
 */
final class SharedPrefix {
  private SharedPrefix() {}

  /** The page size the prompt is shared in: the model's KV page, else the prompt as one page. */
  static int pageSize(LanguageModel model, int inputLen) {
    return model.kvPageSize().orElse(inputLen);
  }

  /**
   * Checks that a prompt of {@code inputLen} tokens is whole pages of {@code model}'s KV cache.
   *
   * @throws IllegalArgumentException otherwise
   */
  static void check(LanguageModel model, int inputLen) {
    int page = pageSize(model, inputLen);
    if (inputLen % page != 0) {
      throw new IllegalArgumentException(
          "--shared-prefix needs --input-len to be a multiple of the KV page size ("
              + page
              + " tokens), got "
              + inputLen);
    }
  }

  /**
   * Prefills {@code prompt} into {@code caches[0]} and attaches its pages to the other caches
   * (empty before); returns each sequence's first decode token: the model's greedy token for the
   * first, a random token for each other so that the sequences' decode rows differ.
   */
  static int[] prefill(
      LanguageModel model, KvCache[] caches, int[] prompt, SplittableRandom random) {
    int n = prompt.length;
    int[] positions = new int[n];
    for (int i = 0; i < n; i++) {
      positions[i] = i;
    }
    int[] first =
        model.forwardGreedy(
            prompt,
            new BatchLayout(new int[] {0, n}, positions),
            new KvCache[] {caches[0]},
            new int[] {n - 1});
    int page = pageSize(model, n);
    int[] next = new int[caches.length];
    next[0] = first[0];
    int vocab = model.config().vocabSize();
    for (int s = 1; s < caches.length; s++) {
      List<KvCache.Page> pages = new ArrayList<>();
      try {
        for (int p = 0; p < n / page; p++) {
          pages.add(caches[0].retainPage(p, page));
        }
        caches[s].attachPages(pages, page);
      } finally {
        // The attaching cache holds its own references; these handles go.
        pages.forEach(KvCache.Page::close);
      }
      next[s] = random.nextInt(vocab);
    }
    return next;
  }
}
