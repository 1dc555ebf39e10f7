/** Tests of the topology record on fake inputs. */
package dev.ringmaster.cuda.topology;
