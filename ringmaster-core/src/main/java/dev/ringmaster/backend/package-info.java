/** Backends: element types and the compute kernels each device provides. */
package dev.ringmaster.backend;
