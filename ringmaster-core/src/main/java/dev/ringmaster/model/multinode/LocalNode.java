package dev.ringmaster.model.multinode;

import dev.ringmaster.runtime.LanguageModel;
import java.util.function.Consumer;

/**
 * This node's ranks, loaded.
 *
 * @param model the node's ranks as one model (their collectives span every node); each step's
 *     result is its first rank's, which every rank shares
 * @param abort wakes ranks blocked in a collective when another node failed (closing the data
 *     plane); may do nothing where the backend cannot interrupt a collective
 * @param resources closed after the model (the data plane)
 */
public record LocalNode(LanguageModel model, Consumer<Throwable> abort, AutoCloseable resources)
    implements AutoCloseable {

  @Override
  public void close() {
    try {
      model.close();
    } finally {
      if (resources != null) {
        try {
          resources.close();
        } catch (Exception e) {
          throw new IllegalStateException("closing the node's collectives failed: " + e, e);
        }
      }
    }
  }
}
