package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.arch.ExpertPlacement;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The all-to-all dispatch kernels ({@code moe_dispatch.cu}) with every rank of a group simulated on
 * one GPU and the exchanges done on the host: pack and unpack equal {@link A2aReference} bit for
 * bit, the owners' experts run through {@link MoeKernels#moeExpertPairs}, and the combined output
 * of every token equals, bit for bit, the one-GPU {@code moeExperts} of the whole batch with the
 * same kernels (a pair's output does not depend on the other pairs). Random data, buffers
 * NaN-poisoned, experts no token chose and ranks that route or receive nothing included.
 */
@Tag("gpu")
class ExpertDispatchGpuTest {

  /**
   * Cases: ranks, tokens, experts, topK, hidden, inter, experts the routing draws from ({@code
   * experts / ranks}: everything on rank 0, the other ranks receive only padding), shared-expert
   * output present, tensor-core kernels.
   */
  @ParameterizedTest
  @CsvSource({
    "2,5,8,2,64,16,8,true,false", // uneven slices (3 + 2)
    "3,2,6,2,72,24,6,true,true", // rank 2 routes no token
    "4,13,16,4,136,40,4,true,true", // ranks 1-3 receive nothing
    "2,33,64,6,256,176,20,false,true", // most experts never chosen, no shared experts
    "1,7,8,3,64,8,8,true,false", // one rank: a local round trip
    "2,9,8,2,100,36,8,true,false", // hidden not a multiple of 8 (CUDA-core kernels)
    "4,40,32,8,128,64,32,true,true"
  })
  void roundTripOnTheGpuEqualsTheOneGpuExperts(
      int ranks,
      int n,
      int experts,
      int topK,
      int hidden,
      int inter,
      int among,
      boolean shared,
      boolean tensorCores) {
    Rand r = new Rand();
    long seed = r.seed();
    float[] x = r.uniform(n * hidden, 1f);
    float[] sharedOut = shared ? r.uniform(n * hidden, 1f) : null;
    int[] ids = new int[n * topK];
    float[] weights = new float[n * topK];
    A2aReference.route(r.random(), n, topK, among, ids, weights);
    Rand.Bf16 w13 = r.bf16(experts * 2 * inter * hidden, 0.1f);
    Rand.Bf16 w2 = r.bf16(experts * hidden * inter, 0.1f);
    ExpertPlacement placement = ExpertPlacement.contiguous(experts, ranks);
    int[] owner = new int[experts];
    for (int e = 0; e < experts; e++) {
      owner[e] = placement.owner(e);
    }
    int local = experts / ranks;
    Gpu.run(
        s -> {
          RingmasterKernels k = Gpu.kernels();
          try (ParallelKernels pk = new ParallelKernels()) {
            long xd = s.f32(x).ptr();
            long idsd = s.i32(ids).ptr();
            long wd = s.f32(weights).ptr();
            long ownerd = s.i32(owner).ptr();
            long w13d = s.bf16(w13.bits()).ptr();
            long w2d = s.bf16(w2.bits()).ptr();
            int[] want =
                oneGpu(
                    s,
                    k,
                    xd,
                    w13d,
                    w2d,
                    idsd,
                    wd,
                    sharedOut,
                    n,
                    experts,
                    topK,
                    hidden,
                    inter,
                    tensorCores);

            // Dispatch: every rank packs, the host exchanges, every owner unpacks.
            float[][] sends = new float[ranks][];
            for (int p = 0; p < ranks; p++) {
              A2aLayout l = new A2aLayout(ranks, p, n, hidden, topK);
              DeviceBuffer send = s.poisoned(Math.max(1, ranks * l.dispatchFloatsPerPeer()));
              pk.a2aPack(s.stream(), l, send.ptr(), xd, idsd, wd, ownerd);
              sends[p] = s.read(send, (int) (ranks * l.dispatchFloatsPerPeer()));
              assertBits(
                  "pack, rank " + p + ", seed " + seed,
                  sends[p],
                  A2aReference.pack(l, x, ids, weights, owner));
            }
            A2aLayout any = new A2aLayout(ranks, 0, n, hidden, topK);
            float[][] recv = A2aReference.exchange(sends, (int) any.dispatchFloatsPerPeer());
            float[][] ys = new float[ranks][];
            for (int p = 0; p < ranks; p++) {
              A2aLayout l = new A2aLayout(ranks, p, n, hidden, topK);
              int rows = l.receivedRows();
              int[] localOf = new int[experts];
              for (int e = 0; e < experts; e++) {
                localOf[e] = owner[e] == p ? placement.localIndex(e) : -1;
              }
              DeviceBuffer xr = s.poisoned((long) rows * hidden);
              DeviceBuffer idr = s.alloc(4L * rows * topK);
              DeviceBuffer wr = s.poisoned((long) rows * topK);
              pk.a2aUnpack(
                  s.stream(),
                  l,
                  xr.ptr(),
                  idr.ptr(),
                  wr.ptr(),
                  s.f32(recv[p]).ptr(),
                  s.i32(localOf).ptr(),
                  experts);
              A2aReference.Unpacked u = A2aReference.unpack(l, recv[p], localOf);
              String at = "unpack, rank " + p + ", seed " + seed;
              assertBits(at + ": x", s.read(xr, rows * hidden), u.x());
              assertThat(s.readInts(idr, rows * topK)).as(at + ": ids").containsExactly(u.ids());
              assertBits(at + ": weights", s.read(wr, rows * topK), u.weights());
              // The owner's experts (a contiguous range of the stacked weights).
              try (MoeWorkspace ws = new MoeWorkspace(rows, local, topK, hidden, inter)) {
                CudaDriver.get().memsetD8Async(ws.h.ptr(), 0xff, ws.h.bytes(), s.stream().handle());
                ws.y.poison(s.stream());
                long first = placement.expertsOf(p)[0];
                k.moe()
                    .moeExpertPairs(
                        s.stream(),
                        ws,
                        xr.ptr(),
                        w13d + first * 2L * 2 * inter * hidden,
                        w2d + first * 2L * hidden * inter,
                        idr.ptr(),
                        wr.ptr(),
                        rows,
                        hidden,
                        inter,
                        tensorCores);
                ys[p] = s.read(ws.y, rows * topK * hidden);
              }
            }

            // Combine: the host sends the pair rows back, every rank combines its slice.
            float[][] back = A2aReference.exchange(ys, (int) any.combineFloatsPerPeer());
            for (int p = 0; p < ranks; p++) {
              A2aLayout l = new A2aLayout(ranks, p, n, hidden, topK);
              int per = l.perRank();
              float[] slice = null;
              DeviceBuffer out;
              if (shared) {
                slice = new float[Math.max(1, per * hidden)];
                Arrays.fill(slice, Float.NaN); // rows past the slice are zeroed, not read
                System.arraycopy(sharedOut, l.first() * hidden, slice, 0, l.mine() * hidden);
                out = s.f32(slice);
              } else {
                out = s.poisoned(Math.max(1, (long) per * hidden));
              }
              pk.a2aCombine(
                  s.stream(),
                  l,
                  out.ptr(),
                  shared ? out.ptr() : 0,
                  s.f32(back[p]).ptr(),
                  idsd,
                  ownerd);
              float[] got = s.read(out, per * hidden);
              String at = "combine, rank " + p + ", seed " + seed;
              assertBits(at, got, A2aReference.combine(l, slice, back[p], ids, owner));
              for (int i = 0; i < l.mine() * hidden; i++) {
                assertThat(Float.floatToRawIntBits(got[i]))
                    .as(
                        "%s: token %d dim %d against one GPU",
                        at, l.first() + i / hidden, i % hidden)
                    .isEqualTo(want[l.first() * hidden + i]);
              }
            }
          }
        });
  }

  /** Bits of {@code moeExperts} of the whole batch on one GPU, onto the shared-expert output. */
  private static int[] oneGpu(
      DeviceScope s,
      RingmasterKernels k,
      long x,
      long w13,
      long w2,
      long ids,
      long weights,
      float[] shared,
      int n,
      int experts,
      int topK,
      int hidden,
      int inter,
      boolean tensorCores) {
    try (MoeWorkspace ws = new MoeWorkspace(n, experts, topK, hidden, inter)) {
      DeviceBuffer out = shared != null ? s.f32(shared) : s.poisoned((long) n * hidden);
      boolean acc = shared != null;
      if (tensorCores) {
        k.moe()
            .moeExpertsMma(
                s.stream(), ws, out.ptr(), x, w13, w2, ids, weights, n, hidden, inter, acc);
      } else {
        k.moe()
            .moeExpertsFused(
                s.stream(), ws, out.ptr(), x, w13, w2, ids, weights, n, hidden, inter, acc);
      }
      return Compare.bits(s.read(out, n * hidden));
    }
  }

  /** Equal bits everywhere except where the reference leaves an element unwritten. */
  private static void assertBits(String what, float[] got, float[] want) {
    assertThat(got).as(what + ": length").hasSize(want.length);
    for (int i = 0; i < want.length; i++) {
      int g = Float.floatToRawIntBits(got[i]);
      int w = Float.floatToRawIntBits(want[i]);
      if (!A2aReference.unwritten(want[i]) && g != w) {
        throw new AssertionError(
            String.format("%s: element %d has bits %08x, want %08x", what, i, g, w));
      }
    }
  }
}
