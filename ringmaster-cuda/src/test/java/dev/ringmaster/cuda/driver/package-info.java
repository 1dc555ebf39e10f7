/** GPU tests of the driver bindings. */
package dev.ringmaster.cuda.driver;
