package dev.ringmaster.sim.hw;

/**
 * Calibrated time of one peer-memory allreduce kernel (one-shot, two-shot or fused), as {@code
 * bench collectives} measures it: {@code time = latencyUs + transfer / readEfficiency}, where
 * transfer is the data movement at full link bandwidth ({@link
 * CollectiveModel#peerTransferSeconds}: one-shot loads the whole message from every peer, two-shot
 * 1/n of it twice, limited by a GPU's own link or the socket link on PCIe).
 *
 * @param latencyUs fixed part, microseconds: the copy into the staging buffer, the kernel launch
 *     and the barriers (one for one-shot and fused, two for two-shot)
 * @param readEfficiency fraction of the link bandwidth the kernel's peer loads reach at large sizes
 *     (for the fused kernel the residual add and RMSNorm it does on the way are included)
 */
public record PeerKernel(double latencyUs, double readEfficiency) {

  /** Microseconds for a message whose data movement takes {@code transferSeconds} at full rate. */
  public double timeUs(double transferSeconds) {
    return latencyUs + transferSeconds / readEfficiency * 1e6;
  }
}
