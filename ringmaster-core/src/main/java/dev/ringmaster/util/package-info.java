/** Small utilities shared by all layers: progress reporting. */
package dev.ringmaster.util;
