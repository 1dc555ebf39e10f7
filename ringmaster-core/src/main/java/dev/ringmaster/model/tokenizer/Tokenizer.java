package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * A byte-level BPE tokenizer read from a Hugging Face {@code tokenizer.json}, giving the same ids
 * as the Hugging Face {@code tokenizers} library. Instances are immutable and thread-safe.
 *
 * <p>Encoding runs: added-token matching, normalizer, pre-tokenizer, BPE, post-processor. When
 * {@code tokenizer_config.json} sets {@code add_bos_token} or {@code add_eos_token}, those flags
 * decide which of BOS/EOS {@link #encode(String)} adds, replacing tokenizer.json's post-processor,
 * as transformers' Llama-family tokenizers (which DeepSeek-V3 declares) do.
 */
public final class Tokenizer {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Normalizer normalizer;
  private final PreTokenizer preTokenizer;
  private final BpeModel model;
  private final AddedVocabulary addedVocabulary;
  private final PostProcessor postProcessor;
  private final Decoder decoder;
  private final String[] idToToken;
  private final boolean[] special;
  private final Map<String, Integer> addedTokenIds;
  private final TokenizerConfig config;
  private final boolean byteLevelDecoder;

  private Tokenizer(
      Normalizer normalizer,
      PreTokenizer preTokenizer,
      BpeModel model,
      List<AddedToken> addedTokens,
      JsonNode postProcessorJson,
      Decoder decoder,
      TokenizerConfig config,
      boolean byteLevelDecoder) {
    this.byteLevelDecoder = byteLevelDecoder;
    this.normalizer = normalizer;
    this.preTokenizer = preTokenizer;
    this.model = model;
    this.decoder = decoder;
    this.config = config;
    this.addedVocabulary = new AddedVocabulary(addedTokens, normalizer);
    this.addedTokenIds = new HashMap<>();
    int maxId = -1;
    for (int id : model.vocab().values()) {
      maxId = Math.max(maxId, id);
    }
    for (AddedToken t : addedTokens) {
      maxId = Math.max(maxId, t.id());
    }
    this.idToToken = new String[maxId + 1];
    this.special = new boolean[maxId + 1];
    model.vocab().forEach((token, id) -> idToToken[id] = token);
    for (AddedToken t : addedTokens) {
      idToToken[t.id()] = t.content();
      special[t.id()] = t.special();
      addedTokenIds.put(t.content(), t.id());
    }
    this.postProcessor = buildPostProcessor(postProcessorJson);
  }

  /**
   * Loads a tokenizer.
   *
   * @param modelDirOrTokenizerJson a model directory holding {@code tokenizer.json}, or the path of
   *     a tokenizer.json file; {@code tokenizer_config.json}, {@code generation_config.json} and
   *     {@code chat_template.jinja} are read from the same directory when present
   * @throws TokenizerLoadException when a file is missing, unreadable, malformed or unsupported
   */
  public static Tokenizer load(Path modelDirOrTokenizerJson) {
    if (!Files.exists(modelDirOrTokenizerJson)) {
      throw new TokenizerLoadException(
          modelDirOrTokenizerJson
              + ": file not found (expected a model directory holding tokenizer.json, or a"
              + " tokenizer.json file)");
    }
    Path file =
        Files.isDirectory(modelDirOrTokenizerJson)
            ? modelDirOrTokenizerJson.resolve("tokenizer.json")
            : modelDirOrTokenizerJson;
    Path dir = file.toAbsolutePath().getParent();
    JsonNode root = readJson(file, true);
    JsonNode tokenizerConfig = readJson(dir.resolve("tokenizer_config.json"), false);
    JsonNode generationConfig = readJson(dir.resolve("generation_config.json"), false);
    TokenizerConfig config;
    try {
      config = TokenizerConfig.fromJson(tokenizerConfig, generationConfig);
      Path jinja = dir.resolve("chat_template.jinja");
      if (config.chatTemplate() == null && Files.isRegularFile(jinja)) {
        config = withTemplate(config, Files.readString(jinja));
      }
    } catch (IOException | RuntimeException e) {
      throw new TokenizerLoadException(
          dir + ": cannot read tokenizer_config: " + e.getMessage(), e);
    }
    try {
      return fromJson(root, config);
    } catch (IllegalArgumentException e) {
      throw new TokenizerLoadException(file + ": " + e.getMessage(), e);
    }
  }

  private static TokenizerConfig withTemplate(TokenizerConfig c, String template) {
    return new TokenizerConfig(
        c.addBosToken(),
        c.addEosToken(),
        c.bosToken(),
        c.eosToken(),
        template,
        c.generationBosId(),
        c.generationEosIds());
  }

  /** Builds a tokenizer from parsed tokenizer.json content (for tests and embedded files). */
  static Tokenizer fromJson(JsonNode root, TokenizerConfig config) {
    if (!root.isObject()) {
      throw new IllegalArgumentException("top level is not a JSON object");
    }
    Normalizer normalizer = Normalizer.fromJson(root.get("normalizer"));
    PreTokenizer preTokenizer = PreTokenizer.fromJson(root.get("pre_tokenizer"));
    BpeModel model = BpeModel.fromJson(Json.required(root, "model", "tokenizer.json"));
    List<AddedToken> added = new ArrayList<>();
    JsonNode addedJson = root.get("added_tokens");
    if (!Json.isAbsent(addedJson)) {
      for (JsonNode t : addedJson) {
        added.add(
            new AddedToken(
                Json.required(t, "id", "added token").asInt(),
                Json.required(t, "content", "added token").asText(),
                Json.bool(t, "special", false),
                Json.bool(t, "lstrip", false),
                Json.bool(t, "rstrip", false),
                Json.bool(t, "single_word", false),
                Json.bool(t, "normalized", true)));
      }
    }
    Decoder decoder = Decoder.fromJson(root.get("decoder"));
    return new Tokenizer(
        normalizer,
        preTokenizer,
        model,
        added,
        root.get("post_processor"),
        decoder,
        config,
        usesByteLevel(root.get("decoder")));
  }

  /** Whether a decoder is ByteLevel or a Sequence holding one. */
  private static boolean usesByteLevel(JsonNode decoder) {
    if (Json.isAbsent(decoder)) {
      return false;
    }
    if ("ByteLevel".equals(decoder.path("type").asText())) {
      return true;
    }
    for (JsonNode child : decoder.path("decoders")) {
      if (usesByteLevel(child)) {
        return true;
      }
    }
    return false;
  }

  private PostProcessor buildPostProcessor(JsonNode json) {
    if (config.addBosToken() == null && config.addEosToken() == null) {
      return PostProcessor.fromJson(json, addedTokenIds);
    }
    int[] before = idsOf(Boolean.TRUE.equals(config.addBosToken()), config.bosToken());
    int[] after = idsOf(Boolean.TRUE.equals(config.addEosToken()), config.eosToken());
    return PostProcessor.wrap(before, after);
  }

  private int[] idsOf(boolean wanted, String token) {
    if (!wanted || token == null) {
      return new int[0];
    }
    OptionalInt id = tokenToId(token);
    return id.isPresent() ? new int[] {id.getAsInt()} : new int[0];
  }

  private static JsonNode readJson(Path file, boolean required) {
    if (!Files.isRegularFile(file)) {
      if (required) {
        throw new TokenizerLoadException(file + ": file not found");
      }
      return null;
    }
    try {
      return JSON.readTree(file.toFile());
    } catch (JacksonException e) {
      throw new TokenizerLoadException(
          file + ": malformed JSON: " + e.getOriginalMessage() + " at " + e.getLocation(), e);
    } catch (IOException e) {
      throw new TokenizerLoadException(file + ": cannot read: " + e.getMessage(), e);
    }
  }

  /** Encodes text with the special tokens the post-processor adds (e.g. BOS). */
  public int[] encode(String text) {
    return encode(text, true);
  }

  /**
   * Encodes text. Added tokens written in the text (such as {@code <｜end▁of▁sentence｜>}) are always
   * recognized, whatever {@code addSpecialTokens} says.
   *
   * @param addSpecialTokens whether to let the post-processor add its special tokens
   */
  public int[] encode(String text, boolean addSpecialTokens) {
    IntArray ids = new IntArray(text.length() / 3 + 4);
    for (AddedVocabulary.Segment segment : addedVocabulary.split(text)) {
      if (segment.isToken()) {
        ids.add(segment.tokenId());
        continue;
      }
      for (String piece : preTokenizer.split(segment.text())) {
        ids.addAll(model.tokenize(piece));
      }
    }
    int[] out = ids.toArray();
    return addSpecialTokens ? postProcessor.apply(out) : out;
  }

  /** Decodes ids to text, keeping special tokens. */
  public String decode(int[] ids) {
    return decode(ids, false);
  }

  /**
   * Decodes ids to text. Ids outside the vocabulary are ignored, as in Hugging Face.
   *
   * @param skipSpecialTokens drop tokens marked special (BOS, EOS, padding...)
   */
  public String decode(int[] ids, boolean skipSpecialTokens) {
    List<String> tokens = new ArrayList<>(ids.length);
    for (int id : ids) {
      if (id < 0 || id >= idToToken.length || idToToken[id] == null) {
        continue;
      }
      if (skipSpecialTokens && special[id]) {
        continue;
      }
      tokens.add(idToToken[id]);
    }
    return String.join("", decoder.decode(tokens));
  }

  /** The size of the id space: one more than the largest id, added tokens included. */
  public int vocabSize() {
    return idToToken.length;
  }

  /** The token string of an id (byte-level alphabet for BPE tokens), or null if unassigned. */
  public String idToToken(int id) {
    return id >= 0 && id < idToToken.length ? idToToken[id] : null;
  }

  /**
   * The bytes a token stands for in decoded text, or null for special tokens and unassigned ids:
   * what constrained decoding matches against. With a ByteLevel decoder these are exact, also for
   * tokens that hold part of a multi-byte character; otherwise the token's decoded UTF-8.
   */
  public byte[] tokenBytes(int id) {
    if (id < 0 || id >= idToToken.length || idToToken[id] == null || special[id]) {
      return null;
    }
    String token = idToToken[id];
    if (addedTokenIds.containsKey(token)) {
      return token.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
    if (byteLevelDecoder) {
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(token.length());
      ByteLevel.appendTokenBytes(token, out);
      return out.toByteArray();
    }
    return decode(new int[] {id}).getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  /** The id of a token string (added tokens first, then the BPE vocabulary). */
  public OptionalInt tokenToId(String token) {
    Integer id = addedTokenIds.get(token);
    if (id == null) {
      id = model.vocab().get(token);
    }
    return id == null ? OptionalInt.empty() : OptionalInt.of(id);
  }

  /** Whether an id is an added token marked special. */
  public boolean isSpecial(int id) {
    return id >= 0 && id < special.length && special[id];
  }

  /** The BOS id named by tokenizer_config.json (else generation_config.json), if any. */
  public OptionalInt bosId() {
    if (config.bosToken() != null) {
      OptionalInt id = tokenToId(config.bosToken());
      if (id.isPresent()) {
        return id;
      }
    }
    return config.generationBosId() == null
        ? OptionalInt.empty()
        : OptionalInt.of(config.generationBosId());
  }

  /**
   * The ids that end generation: generation_config.json's {@code eos_token_id} (one or a list)
   * followed by tokenizer_config.json's EOS token if not already listed. Empty if neither is set.
   */
  public int[] eosIds() {
    Set<Integer> ids = new LinkedHashSet<>(config.generationEosIds());
    if (config.eosToken() != null) {
      tokenToId(config.eosToken()).ifPresent(ids::add);
    }
    return ids.stream().mapToInt(Integer::intValue).toArray();
  }

  /** The chat template of tokenizer_config.json (or chat_template.jinja), if there is one. */
  public Optional<ChatTemplate> chatTemplate() {
    if (config.chatTemplate() == null) {
      return Optional.empty();
    }
    return Optional.of(
        ChatTemplate.parse(config.chatTemplate(), config.bosToken(), config.eosToken()));
  }

  /** A decoder for streamed output that keeps special tokens. */
  public StreamDecoder newStreamDecoder() {
    return newStreamDecoder(false);
  }

  /**
   * A decoder for streamed output.
   *
   * @param skipSpecialTokens drop tokens marked special
   */
  public StreamDecoder newStreamDecoder(boolean skipSpecialTokens) {
    return new StreamDecoder(ids -> decode(ids, skipSpecialTokens));
  }

  /** A growable int array, to avoid boxing on the encode path. */
  private static final class IntArray {
    private int[] data;
    private int size;

    IntArray(int capacity) {
      data = new int[Math.max(capacity, 4)];
    }

    void add(int v) {
      if (size == data.length) {
        data = Arrays.copyOf(data, size * 2);
      }
      data[size++] = v;
    }

    void addAll(int[] vs) {
      if (size + vs.length > data.length) {
        data = Arrays.copyOf(data, Math.max(size * 2, size + vs.length));
      }
      System.arraycopy(vs, 0, data, size, vs.length);
      size += vs.length;
    }

    int[] toArray() {
      return Arrays.copyOf(data, size);
    }
  }
}
