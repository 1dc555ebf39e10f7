package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvBlockTable;
import dev.ringmaster.runtime.KvCache;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RadixCacheTest {
  private static final int PAGE = 2;

  /** A page that holds a reference on one block and records when it was closed. */
  private final class CountedPage implements KvCache.Page {
    final String name;
    final int block;
    int closes;

    CountedPage(String name, int block) {
      this.name = name;
      this.block = block;
    }

    @Override
    public void close() {
      closes++;
      closeOrder.add(name);
      pool.release(block);
    }
  }

  private final KvBlockAllocator pool = new KvBlockAllocator(PAGE, 16);
  private final RadixCache tree = new RadixCache(PAGE);
  private final List<CountedPage> made = new ArrayList<>();
  private final List<String> closeOrder = new ArrayList<>();

  /** Inserts every whole page of {@code tokens} the tree lacks, as a sequence would. */
  private List<RadixCache.Node> insertAll(int[] tokens) {
    List<RadixCache.Node> path = new ArrayList<>();
    RadixCache.Node parent = null;
    for (int p = 0; p < tokens.length / PAGE; p++) {
      RadixCache.Node n = tree.child(parent, i -> tokens[i], p);
      if (n == null) {
        // A sequence's block, retained by the page; the sequence then finishes.
        int block;
        try (KvBlockTable seq = pool.newTable()) {
          seq.ensure(PAGE);
          block = seq.retain(0);
        }
        CountedPage page = new CountedPage(tokens[p * PAGE] + "," + tokens[p * PAGE + 1], block);
        made.add(page);
        n = tree.insert(parent, i -> tokens[i], p, page);
      }
      path.add(n);
      parent = n;
    }
    return path;
  }

  private List<RadixCache.Node> match(int[] tokens) {
    return tree.match(i -> tokens[i], tokens.length, Integer.MAX_VALUE);
  }

  @Test
  void matchFindsTheLongestCachedChainOfWholePages() {
    insertAll(new int[] {1, 2, 3, 4, 5, 6});
    assertThat(match(new int[] {1, 2, 3, 4, 5, 6, 7})).hasSize(3);
    assertThat(match(new int[] {1, 2, 3, 4, 5})).hasSize(2); // the last page is not whole
    assertThat(match(new int[] {1, 2, 3, 9, 5, 6})).hasSize(1); // diverges inside page 1
    assertThat(match(new int[] {2, 1})).isEmpty();
    assertThat(tree.match(i -> new int[] {1, 2, 3, 4, 5, 6}[i], 6, 2)).hasSize(2);
    assertThat(tree.peek(i -> new int[] {1, 2, 3, 4}[i], 4, 9)).isEqualTo(2);
    assertThat(tree.pages()).isEqualTo(3);
    assertThat(pool.used()).isEqualTo(3);
  }

  @Test
  void promptsThatDivergeShareTheirCommonPagesAndBranchAtTheSplitPage() {
    List<RadixCache.Node> a = insertAll(new int[] {1, 2, 3, 4, 5, 6});
    List<RadixCache.Node> b = insertAll(new int[] {1, 2, 3, 4, 7, 8, 9, 10});
    assertThat(b.get(0)).isSameAs(a.get(0));
    assertThat(b.get(1)).isSameAs(a.get(1));
    assertThat(b.get(2)).isNotSameAs(a.get(2));
    assertThat(tree.pages()).isEqualTo(5); // 2 shared + 1 + 2
    assertThat(match(new int[] {1, 2, 3, 4, 7, 8, 0, 0}))
        .containsExactly(a.get(0), a.get(1), b.get(2));
  }

  @Test
  void evictionTakesLeastRecentlyUsedUnlockedLeavesFirstAndFreesTheirBlocks() {
    insertAll(new int[] {1, 2, 3, 4}); // pages 12, 34
    insertAll(new int[] {5, 6}); // page 56
    insertAll(new int[] {1, 2, 7, 8}); // page 78 under 12
    match(new int[] {5, 6}); // 56 is now the most recently used
    assertThat(tree.evict(1)).isEqualTo(1);
    assertThat(closed()).containsExactly("3,4");
    assertThat(tree.evict(1)).isEqualTo(1);
    assertThat(closed()).containsExactly("3,4", "7,8");
    // 12 became a leaf when its children went; it was used before 56
    assertThat(tree.evict(1)).isEqualTo(1);
    assertThat(closed()).containsExactly("3,4", "7,8", "1,2");
    assertThat(pool.used()).isEqualTo(1);
    assertThat(tree.pages()).isEqualTo(1);
  }

  @Test
  void lockedPagesAndTheirPrefixesSurviveEvictionAndFlushUntilUnlocked() {
    List<RadixCache.Node> path = insertAll(new int[] {1, 2, 3, 4});
    insertAll(new int[] {9, 9});
    tree.lock(path);
    assertThat(tree.evictablePages()).isEqualTo(1);
    assertThat(tree.flush()).isEqualTo(1);
    assertThat(tree.pages()).isEqualTo(2);
    assertThat(tree.evict(5)).isZero();
    assertThat(path.get(1).locks()).isEqualTo(1);
    tree.unlock(path);
    assertThat(tree.flush()).isEqualTo(2);
    assertThat(tree.pages()).isZero();
    assertThat(pool.used()).isZero();
    assertThat(made).allSatisfy(p -> assertThat(p.closes).isEqualTo(1));
    assertThatThrownBy(() -> tree.unlock(path)).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aPageCannotBeInsertedTwiceUnderTheSamePrefix() {
    insertAll(new int[] {1, 2});
    assertThatThrownBy(
            () -> tree.insert(null, i -> new int[] {1, 2}[i], 0, new CountedPage("x", 0)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already cached");
  }

  private List<String> closed() {
    return closeOrder;
  }
}
