/** Small utilities shared by all layers: progress reporting, NumPy {@code .npy} files. */
package dev.ringmaster.util;
