package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where one eagerly launched step spends its GPU time: events recorded between the ops, the time
 * between two marks charged to the label of the later one. Launch gaps count towards the op that
 * follows them, so an eager profile overstates small ops compared with a graph replay; the total is
 * printed beside the step's graph time for that reason. Turned on by {@link
 * CudaModelOptions#profile()} ({@code bench one-batch --profile}).
 */
final class StepProfiler {
  private final CudaStream stream;
  private final List<CudaEvent> events = new ArrayList<>();
  private final List<String> labels = new ArrayList<>();

  StepProfiler(CudaStream stream) {
    this.stream = stream;
    mark("start");
  }

  /** Ends the segment that began at the previous mark and charges it to {@code label}. */
  void mark(String label) {
    CudaEvent e = CudaEvent.create();
    e.record(stream);
    events.add(e);
    labels.add(label);
  }

  /** Waits for the step and returns milliseconds per label, in first-seen order. */
  Map<String, Double> finish() {
    stream.synchronize();
    Map<String, Double> ms = new LinkedHashMap<>();
    for (int i = 1; i < events.size(); i++) {
      ms.merge(labels.get(i), (double) events.get(i).millisSince(events.get(i - 1)), Double::sum);
    }
    events.forEach(CudaEvent::close);
    return ms;
  }

  /** One line: total, then each label's milliseconds and share. */
  static String format(String what, Map<String, Double> ms) {
    double total = ms.values().stream().mapToDouble(Double::doubleValue).sum();
    StringBuilder sb =
        new StringBuilder(String.format(Locale.ROOT, "profile %s: %.3f ms eager:", what, total));
    ms.forEach(
        (k, v) ->
            sb.append(String.format(Locale.ROOT, " %s %.3f (%.0f%%)", k, v, 100 * v / total)));
    return sb.toString();
  }
}
