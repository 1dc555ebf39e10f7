/**
 * EAGLE-3 draft heads: the head's {@code config.json} ({@link
 * dev.ringmaster.model.eagle.Eagle3HeadConfig}), the layers of the target it reads, and the names
 * of its tensors in the {@code LlamaForCausalLMEagle3} checkpoint layout that SGLang and vLLM load.
 */
package dev.ringmaster.model.eagle;
