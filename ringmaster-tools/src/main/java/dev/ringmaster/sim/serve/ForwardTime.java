package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.model.Category;
import dev.ringmaster.sim.model.OpCost;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Predicted time of one forward pass on one rank.
 *
 * @param totalUs microseconds
 * @param breakdownUs microseconds per breakdown term
 * @param ops the operators with their costs
 * @param opTimesUs microseconds of each operator, same order as ops
 * @param collectives collectives issued
 * @param kernels kernel launches (collectives included)
 */
public record ForwardTime(
    double totalUs,
    Map<Category, Double> breakdownUs,
    List<OpCost> ops,
    List<Double> opTimesUs,
    List<CollectiveCall> collectives,
    int kernels) {

  /** The breakdown term that takes the most time. */
  public Category dominant() {
    return breakdownUs.entrySet().stream()
        .max(Map.Entry.comparingByValue())
        .map(Map.Entry::getKey)
        .orElse(Category.WEIGHTS);
  }

  /** Sum of two forwards (speculative cycles). */
  public static Map<Category, Double> add(
      Map<Category, Double> a, Map<Category, Double> b, double scaleB) {
    Map<Category, Double> out = new EnumMap<>(Category.class);
    for (Category c : Category.values()) {
      out.put(c, a.getOrDefault(c, 0.0) + scaleB * b.getOrDefault(c, 0.0));
    }
    return out;
  }
}
