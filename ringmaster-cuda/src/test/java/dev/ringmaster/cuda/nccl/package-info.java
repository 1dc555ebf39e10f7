/** Tests of the NCCL bindings' host side: the unique-id exchange and the init address. */
package dev.ringmaster.cuda.nccl;
