package dev.ringmaster.model.multinode;

import java.io.IOException;
import java.net.InetAddress;

/**
 * How one node holds its share of the model's ranks: the CPU's TCP collectives or the GPU's NCCL.
 * Called in order: {@link #bind} before the nodes meet (the port goes to the others), {@link #load}
 * once every node's address is known.
 */
public interface NodeBackend {
  /**
   * Opens whatever the other nodes must reach for the collectives, on the interface this node uses
   * to reach node 0, and returns its port; 0 when the backend meets its peers another way.
   */
  int bind(InetAddress local) throws IOException;

  /** Connects this node's ranks to the others' and loads their shards of the model. */
  LocalNode load(Cluster cluster) throws Exception;

  /**
   * Another node failed while this one was in {@link #load}: make a load that is waiting for the
   * other nodes give up now (best effort; called from another thread).
   */
  default void cancel() {}

  /** What this backend runs, for the start-up line (for example "2 CPU ranks"). */
  String describe();
}
