/** Random-weight models of any supported architecture, for tests and benchmarks. */
package dev.ringmaster.model.random;
