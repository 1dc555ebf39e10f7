package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.config.MoeConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The small-batch MoE kernels against the general path they replace: bit for bit (same sums in the
 * same order), and against the double-precision reference where pairs are skipped. The routing
 * kernel routes greedy selections with one warp and the others with its block, both against the
 * block routing of rm_moe_route; the warp also groups up to 32 greedy pairs by expert (offsets,
 * active experts and each expert's pairs against rm_moe_align's).
 */
@Tag("gpu")
class SmallBatchMoeGpuTest {
  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, scoring, selection, groups, topKGroups, norm, scaling, bias
    "1,64,6,2048,SOFTMAX,GREEDY,1,1,false,1.0,false",
    "2,64,6,2048,SOFTMAX,GREEDY,1,1,true,1.0,false",
    "4,160,6,512,SOFTMAX,GROUP_LIMITED_GREEDY,8,3,false,16.0,false",
    "3,256,8,7168,SIGMOID,NOAUX_TC,8,4,true,2.5,true",
    "9,72,5,100,SIGMOID,NOAUX_TC,4,2,false,1.0,true",
    "1,256,8,7168,SIGMOID,NOAUX_TC,8,4,true,2.5,true",
    "2,72,5,100,SIGMOID,NOAUX_TC,4,2,false,1.0,true",
    // greedy selection: routed by one warp (up to 256 experts, 8 a lane)
    "1,256,8,7168,SIGMOID,GREEDY,1,1,true,2.5,true",
    "3,72,5,100,SOFTMAX,GREEDY,1,1,true,1.0,false",
    "1,200,6,512,SOFTMAX,GREEDY,1,1,false,16.0,false",
    "2,16,6,64,SOFTMAX,GREEDY,1,1,false,1.0,false",
    // Qwen3-30B-A3B: softmax, greedy top-8 of 128, norm_topk_prob; 4 tokens = 32 pairs
    "1,128,8,2048,SOFTMAX,GREEDY,1,1,true,1.0,false",
    "4,128,8,2048,SOFTMAX,GREEDY,1,1,true,1.0,false",
    // 36 pairs: greedy routing by the warp, grouping by the block (the warp groups up to 32)
    "6,64,6,256,SOFTMAX,GREEDY,1,1,false,1.0,false"
  })
  void routerRouteEqualsTheGemvAndTheRoutingKernel(
      int n,
      int e,
      int k,
      int hidden,
      MoeConfig.Scoring scoring,
      MoeConfig.Selection selection,
      int groups,
      int topKGroups,
      boolean norm,
      double scaling,
      boolean hasBias) {
    Rand r = new Rand();
    Rand.Bf16 gate = r.bf16(e * hidden, 0.05f);
    float[] x = r.uniform(n * hidden, 1f);
    float[] bias = hasBias ? r.uniform(e, 0.1f) : null;
    MoeRouting routing =
        MoeRouting.of(
            new MoeConfig(
                e, k, 32, 0, scoring, selection, groups, topKGroups, norm, scaling, hasBias));
    String seed = "seed " + r.seed();
    Gpu.run(
        s -> {
          RingmasterKernels kk = Gpu.kernels();
          DeviceBuffer g = s.bf16(gate.bits());
          DeviceBuffer xs = s.f32(x);
          long biasP = hasBias ? s.f32(bias).ptr() : 0;
          DeviceBuffer wantLogits = s.poisoned((long) n * e);
          DeviceBuffer wantE = s.alloc(4L * n * k);
          DeviceBuffer wantW = s.poisoned((long) n * k);
          // The one-warp-per-row GEMV, whose sums the routing kernel's GEMV repeats.
          GemvVariantsGpuTest.withOneWarpPerRow(
              kk, () -> kk.gemv(s.stream(), wantLogits.ptr(), g.ptr(), xs.ptr(), e, hidden, n));
          kk.moe()
              .moeRoute(s.stream(), wantE.ptr(), wantW.ptr(), wantLogits.ptr(), biasP, n, routing);
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, 8);
              MoeWorkspace want = new MoeWorkspace(n, e, k, hidden, 8)) {
            kk.moe().moeAlign(s.stream(), want, wantE.ptr(), n);
            // Twice without grouping the pairs (the second launch shows that the first left the
            // block counter at zero), then once grouping them as rm_moe_align does.
            for (int round = 0; round < 3; round++) {
              boolean align = round == 2;
              DeviceBuffer logits = s.poisoned((long) n * e);
              DeviceBuffer ex = s.alloc(4L * n * k);
              DeviceBuffer w = s.poisoned((long) n * k);
              ws.offsets.poison(s.stream());
              ws.sortedPairs.poison(s.stream());
              kk.smallBatchMoe()
                  .routerRoute(
                      s.stream(),
                      ws,
                      logits.ptr(),
                      ex.ptr(),
                      w.ptr(),
                      g.ptr(),
                      xs.ptr(),
                      hidden,
                      biasP,
                      n,
                      routing,
                      align);
              String as = seed + ", round " + round;
              assertThat(Compare.bits(s.read(logits, n * e)))
                  .as("logits, %s", as)
                  .isEqualTo(Compare.bits(s.read(wantLogits, n * e)));
              assertThat(s.readInts(ex, n * k))
                  .as("experts, %s", as)
                  .isEqualTo(s.readInts(wantE, n * k));
              assertThat(Compare.bits(s.read(w, n * k)))
                  .as("weights, %s", as)
                  .isEqualTo(Compare.bits(s.read(wantW, n * k)));
              if (align) {
                assertGroupedAlike(s, ws, want, e, n * k, as);
              }
            }
          }
        });
  }

  /**
   * A graph bucket's padding rows (tokens at or past the live count) route to no expert: ids -1 and
   * weights 0, in both routing kernels and with the pairs grouped; the real rows' routing is that
   * of an unmasked launch, bit for bit, and the grouping equals rm_moe_align's over the masked ids.
   */
  @ParameterizedTest
  @CsvSource({
    // tokens, live, experts, topK, selection (GREEDY: the one-warp routing; NOAUX_TC: the block's)
    "8,5,64,6,GREEDY",
    "4,1,64,6,GREEDY",
    "8,0,64,6,GREEDY",
    "16,9,64,6,GREEDY",
    "4,3,256,8,NOAUX_TC",
    "2,2,64,6,GREEDY"
  })
  void paddingRowsRouteToNoExpert(int n, int live, int e, int k, MoeConfig.Selection selection) {
    Rand r = new Rand();
    int hidden = 256;
    Rand.Bf16 gate = r.bf16(e * hidden, 0.05f);
    float[] x = r.uniform(n * hidden, 1f);
    boolean noaux = selection == MoeConfig.Selection.NOAUX_TC;
    MoeRouting routing =
        MoeRouting.of(
            new MoeConfig(
                e,
                k,
                32,
                0,
                noaux ? MoeConfig.Scoring.SIGMOID : MoeConfig.Scoring.SOFTMAX,
                selection,
                noaux ? 8 : 1,
                noaux ? 4 : 1,
                true,
                noaux ? 2.5 : 1.0,
                false));
    String seed = "seed " + r.seed() + ", live " + live + " of " + n;
    Gpu.run(
        s -> {
          RingmasterKernels kk = Gpu.kernels();
          DeviceBuffer g = s.bf16(gate.bits());
          DeviceBuffer xs = s.f32(x);
          DeviceBuffer liveP = s.i32(new int[] {live});
          DeviceBuffer logits = s.poisoned((long) n * e);
          DeviceBuffer allE = s.alloc(4L * n * k);
          DeviceBuffer allW = s.poisoned((long) n * k);
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, 8);
              MoeWorkspace want = new MoeWorkspace(n, e, k, hidden, 8)) {
            kk.smallBatchMoe()
                .routerRoute(
                    s.stream(),
                    ws,
                    logits.ptr(),
                    allE.ptr(),
                    allW.ptr(),
                    g.ptr(),
                    xs.ptr(),
                    hidden,
                    0L,
                    n,
                    routing,
                    false);
            int[] wantE = s.readInts(allE, n * k);
            float[] wantW = s.read(allW, n * k);
            for (int p = live * k; p < n * k; p++) {
              wantE[p] = -1;
              wantW[p] = 0f;
            }
            // rm_moe_route over the same logits, then the fused launch without and with grouping.
            for (int round = 0; round < 3; round++) {
              DeviceBuffer ex = s.alloc(4L * n * k);
              DeviceBuffer w = s.poisoned((long) n * k);
              if (round == 0) {
                kk.moe()
                    .moeRoute(
                        s.stream(), ex.ptr(), w.ptr(), logits.ptr(), 0L, n, routing, liveP.ptr());
              } else {
                ws.offsets.poison(s.stream());
                ws.sortedPairs.poison(s.stream());
                kk.smallBatchMoe()
                    .routerRoute(
                        s.stream(),
                        ws,
                        s.poisoned((long) n * e).ptr(),
                        ex.ptr(),
                        w.ptr(),
                        g.ptr(),
                        xs.ptr(),
                        hidden,
                        0L,
                        n,
                        routing,
                        round == 2,
                        liveP.ptr());
              }
              String as = seed + ", round " + round;
              assertThat(s.readInts(ex, n * k)).as("experts, %s", as).isEqualTo(wantE);
              assertThat(Compare.bits(s.read(w, n * k)))
                  .as("weights, %s", as)
                  .isEqualTo(Compare.bits(wantW));
              if (round == 2) {
                kk.moe().moeAlign(s.stream(), want, ex.ptr(), n);
                assertGroupedAlike(s, ws, want, e, live * k, as);
              }
            }
          }
        });
  }

  /**
   * Expert offsets, active experts and each expert's set of pairs equal (order within: atomics).
   */
  private static void assertGroupedAlike(
      dev.ringmaster.cuda.testing.DeviceScope s,
      MoeWorkspace got,
      MoeWorkspace want,
      int e,
      int pairs,
      String as) {
    int[] offsets = s.readInts(got.offsets, e + 1);
    assertThat(offsets).as("offsets, %s", as).isEqualTo(s.readInts(want.offsets, e + 1));
    int active = s.readInts(got.activeCount, 1)[0];
    assertThat(active).as("active experts, %s", as).isEqualTo(s.readInts(want.activeCount, 1)[0]);
    if (active == 0) {
      assertThat(pairs).as("no pair without an active expert, %s", as).isZero();
      return;
    }
    assertThat(s.readInts(got.activeExperts, active))
        .as("active expert ids, %s", as)
        .isEqualTo(s.readInts(want.activeExperts, active));
    int[] gotPairs = s.readInts(got.sortedPairs, pairs);
    int[] wantPairs = s.readInts(want.sortedPairs, pairs);
    for (int x = 0; x < e; x++) {
      int[] a = java.util.Arrays.copyOfRange(gotPairs, offsets[x], offsets[x + 1]);
      int[] b = java.util.Arrays.copyOfRange(wantPairs, offsets[x], offsets[x + 1]);
      java.util.Arrays.sort(a);
      java.util.Arrays.sort(b);
      assertThat(a).as("pairs of expert %d, %s", x, as).isEqualTo(b);
    }
  }

  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter, accumulate
    "1,64,6,2048,1408,true",
    "1,64,6,2048,1408,false",
    "2,10,6,1024,704,true",
    "3,8,2,100,36,true",
    "2,256,8,7168,256,false",
    "1,16,5,72,40,false"
  })
  void pairExpertsEqualTheGroupedCudaCoreExperts(
      int n, int e, int k, int hidden, int inter, boolean acc) {
    Rand r = new Rand();
    Rand.Bf16 w13 = r.bf16(e * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(e * hidden * inter, 0.1f);
    float[] x = r.uniform(n * hidden, 1f);
    float[] prior = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    MoeGpuTest.route(r, n, e, k, n, experts, weights);
    Gpu.run(
        s -> {
          try (MoeWorkspace a = new MoeWorkspace(n, e, k, hidden, inter);
              MoeWorkspace b = new MoeWorkspace(n, e, k, hidden, inter)) {
            DeviceBuffer xs = s.f32(x);
            DeviceBuffer w13d = s.bf16(w13.bits());
            DeviceBuffer w2d = s.bf16(w2.bits());
            DeviceBuffer ex = s.i32(experts);
            DeviceBuffer wt = s.f32(weights);
            DeviceBuffer want = acc ? s.f32(prior) : s.poisoned((long) n * hidden);
            DeviceBuffer got = acc ? s.f32(prior) : s.poisoned((long) n * hidden);
            a.h.poison(s.stream());
            b.h.poison(s.stream());
            Gpu.kernels()
                .moe()
                .moeExpertsFused(
                    s.stream(),
                    a,
                    want.ptr(),
                    xs.ptr(),
                    w13d.ptr(),
                    w2d.ptr(),
                    ex.ptr(),
                    wt.ptr(),
                    n,
                    hidden,
                    inter,
                    acc);
            Gpu.kernels()
                .smallBatchMoe()
                .experts(
                    s.stream(),
                    b,
                    got.ptr(),
                    xs.ptr(),
                    w13d.ptr(),
                    w2d.ptr(),
                    ex.ptr(),
                    wt.ptr(),
                    n,
                    hidden,
                    inter,
                    acc);
            assertThat(Compare.bits(s.read(got, n * hidden)))
                .as("seed %d", r.seed())
                .isEqualTo(Compare.bits(s.read(want, n * hidden)));
          }
        });
  }

  @ParameterizedTest
  @CsvSource({"1,64,6,256,176", "3,16,4,72,40"})
  void pairsOfOtherRanksAreSkipped(int n, int e, int k, int hidden, int inter) {
    Rand r = new Rand();
    Rand.Bf16 w13 = r.bf16(e * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(e * hidden * inter, 0.1f);
    float[] x = r.uniform(n * hidden, 1f);
    float[] prior = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    MoeGpuTest.route(r, n, e, k, n, experts, weights);
    int[] local = experts.clone();
    for (int p = 0; p < local.length; p++) {
      if (p % 3 != 0) {
        local[p] = -1;
      }
    }
    // The reference without the skipped pairs: their weight is zero.
    float[] kept = weights.clone();
    for (int p = 0; p < kept.length; p++) {
      if (local[p] < 0) {
        kept[p] = 0f;
      }
    }
    float[] want =
        MoeGpuTest.reference(x, w13.values(), w2.values(), experts, kept, n, k, hidden, inter);
    for (int i = 0; i < want.length; i++) {
      want[i] += prior[i];
    }
    Gpu.run(
        s -> {
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
            ws.h.poison(s.stream());
            DeviceBuffer out = s.f32(prior);
            Gpu.kernels()
                .smallBatchMoe()
                .experts(
                    s.stream(),
                    ws,
                    out.ptr(),
                    s.f32(x).ptr(),
                    s.bf16(w13.bits()).ptr(),
                    s.bf16(w2.bits()).ptr(),
                    s.i32(local).ptr(),
                    s.f32(weights).ptr(),
                    n,
                    hidden,
                    inter,
                    true);
            Compare.assertClose(
                "skipped pairs, seed " + r.seed(), s.read(out, n * hidden), want, 1e-4);
          }
        });
  }
}
