/**
 * Small utilities shared by all layers: progress reporting, NumPy {@code .npy} files, whether PNG
 * charts can be drawn.
 */
package dev.ringmaster.util;
