/** Test helpers shared by the core module's tests. */
package dev.ringmaster.testing;
