package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;

/** {@code GET /v1/models}: the one served model; {@code GET /v1/models/{id}}: that model. */
public final class ModelsEndpoint implements Endpoint {
  private final ServerContext ctx;
  private final long created = System.currentTimeMillis() / 1000;

  /** The endpoint over a server context. */
  public ModelsEndpoint(ServerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Exchange ex) {
    ObjectNode out = Json.object();
    out.put("object", "list");
    out.putArray("data").add(model());
    ex.ok(out);
  }

  /** {@code GET /v1/models/{id}}: the model object, or 404 for another id. */
  public Endpoint retrieve() {
    return ex -> {
      String id = ex.pathParam("id");
      if (id == null || !id.equals(ctx.model().name())) {
        throw ApiException.notFound(
            "model",
            "model_not_found",
            "The model '"
                + id
                + "' does not exist; this server serves '"
                + ctx.model().name()
                + "'");
      }
      ex.ok(model());
    };
  }

  private ObjectNode model() {
    ObjectNode m = Json.object();
    m.put("id", ctx.model().name());
    m.put("object", "model");
    m.put("created", created);
    m.put("owned_by", "ringmaster");
    m.put("root", ctx.model().path());
    m.put("max_model_len", ctx.model().maxSequenceLength());
    return m;
  }
}
