/** Tests of the device collectives: CPU-only rule and cache tests, and GPU tests tagged "gpu". */
package dev.ringmaster.cuda.collective;
