/**
 * The contract between the engine and a loaded model, whatever its backend or rank layout: {@link
 * dev.ringmaster.runtime.LanguageModel} runs batched steps over sequences' {@link
 * dev.ringmaster.runtime.KvCache}s laid out by a {@link dev.ringmaster.runtime.BatchLayout}. The
 * engine depends on this package only, never on a backend's model classes. {@link
 * dev.ringmaster.runtime.KvBlockAllocator} is the one allocator of KV blocks (the scheduler's), and
 * a {@link dev.ringmaster.runtime.KvBlockTable} one sequence's block ids, which backends index
 * their storage by. {@link dev.ringmaster.runtime.KernelTuning} is the run's kernel choices, which
 * every backend takes as data.
 */
package dev.ringmaster.runtime;
