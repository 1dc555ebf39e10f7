/** Text and JSON rendering of predictions, sweep tables and PNG plots (XChart). */
package dev.ringmaster.sim.report;
