/** GPU tests of the MLA model executor against the CPU reference engine. */
package dev.ringmaster.cuda.model;
