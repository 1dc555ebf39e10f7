/**
 * Collectives over device memory: {@link dev.ringmaster.cuda.collective.DeviceCommunicator} (the
 * device sibling of the CPU process group) implemented over NCCL with peer-memory one-shot,
 * two-shot and fused allreduce kernels beside it, the rule and measured, cached table that {@code
 * --allreduce auto} uses, and {@link dev.ringmaster.cuda.collective.DeviceWorld}, one platform
 * thread and one rank per local GPU.
 */
package dev.ringmaster.cuda.collective;
