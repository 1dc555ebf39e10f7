package dev.ringmaster.model.tokenizer;

/**
 * A token of the {@code added_tokens} list: matched in the text before BPE runs.
 *
 * @param id its id
 * @param content the text it stands for
 * @param special special tokens (BOS, EOS...) are dropped by {@code skipSpecialTokens} decoding
 * @param lstrip the match also swallows the whitespace on its left
 * @param rstrip the match also swallows the whitespace on its right
 * @param singleWord it only matches when not inside a word
 * @param normalized it is matched against normalized text (else against the raw input)
 */
record AddedToken(
    int id,
    String content,
    boolean special,
    boolean lstrip,
    boolean rstrip,
    boolean singleWord,
    boolean normalized) {}
