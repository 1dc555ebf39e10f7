package dev.ringmaster.tools.benchserve;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/** The API a benchmark talks to, under each of the names sglang.bench_serving accepts for it. */
public enum Backend {
  /** The native {@code POST /generate} of Ringmaster and SGLang (cumulative text per event). */
  NATIVE("/generate", List.of("sglang", "ringmaster", "sglang-native")),
  /** OpenAI {@code POST /v1/completions}. */
  COMPLETIONS("/v1/completions", List.of("openai", "sglang-oai", "vllm", "lmdeploy")),
  /** OpenAI {@code POST /v1/chat/completions}. */
  CHAT(
      "/v1/chat/completions",
      List.of("openai-chat", "sglang-oai-chat", "vllm-chat", "lmdeploy-chat"));

  private final String path;
  private final List<String> names;

  Backend(String path, List<String> names) {
    this.path = path;
    this.names = names;
  }

  /** The request path under the base URL. */
  public String path() {
    return path;
  }

  /** Every accepted {@code --backend} name, in the order help text lists them. */
  public static List<String> allNames() {
    return Arrays.stream(values()).flatMap(b -> b.names.stream()).toList();
  }

  /**
   * The backend a {@code --backend} name stands for.
   *
   * @throws BenchServeException naming the accepted names when {@code name} is none of them
   */
  public static Backend parse(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    for (Backend b : values()) {
      if (b.names.contains(n)) {
        return b;
      }
    }
    throw new BenchServeException(
        "--backend "
            + name
            + " is unknown; choose one of "
            + allNames().stream().collect(Collectors.joining(", ")));
  }
}
