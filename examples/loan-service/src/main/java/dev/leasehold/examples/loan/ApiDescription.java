package dev.leasehold.examples.loan;

import io.swagger.v3.oas.models.Components;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.oas.models.headers.Header;
import io.swagger.v3.oas.models.media.Content;
import io.swagger.v3.oas.models.media.IntegerSchema;
import io.swagger.v3.oas.models.media.MediaType;
import io.swagger.v3.oas.models.media.ObjectSchema;
import io.swagger.v3.oas.models.media.Schema;
import io.swagger.v3.oas.models.media.StringSchema;
import io.swagger.v3.oas.models.responses.ApiResponse;
import io.swagger.v3.oas.models.responses.ApiResponses;
import io.swagger.v3.oas.models.security.SecurityRequirement;
import io.swagger.v3.oas.models.security.SecurityScheme;
import java.util.Map;
import org.springdoc.core.customizers.OpenApiCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Completes the OpenAPI description: HTTP Basic, the problem schema (RFC 9457) on every error
 * answer an operation can give, and the custom headers ({@code Repayment-Duplicate} on a replayed
 * repayment or settlement, {@code Idempotent-Replayed} on a replayed operator command,
 * {@code Retry-After} on 409 and 503).
 */
@Configuration(proxyBeanMethods = false)
class ApiDescription {

    private static final String PROBLEM = "Problem";

    @Bean
    OpenApiCustomizer loanApiDescription() {
        return api -> {
            Components components = api.getComponents() == null ? new Components() : api.getComponents();
            api.setComponents(components);
            ObjectSchema problem = new ObjectSchema();
            problem.addProperty("type", new StringSchema().format("uri").description("stable problem type URI"));
            problem.addProperty("title", new StringSchema());
            problem.addProperty("status", new IntegerSchema());
            problem.addProperty("detail", new StringSchema().description("what is wrong, in words (no Java types)"));
            problem.addProperty("instance", new StringSchema().format("uri"));
            problem.addProperty("fields", new io.swagger.v3.oas.models.media.ArraySchema().items(new StringSchema()));
            problem.setDescription("RFC 9457 problem details");
            components.addSchemas(PROBLEM, problem);
            components.addSecuritySchemes(
                    "basic", new SecurityScheme().type(SecurityScheme.Type.HTTP).scheme("basic"));
            api.addSecurityItem(new SecurityRequirement().addList("basic"));
            if (api.getPaths() == null) {
                return;
            }
            api.getPaths().forEach((path, item) -> {
                for (Map.Entry<PathItem.HttpMethod, Operation> op :
                        item.readOperationsMap().entrySet()) {
                    if (path.startsWith("/api/")) {
                        describe(path, op.getKey(), op.getValue());
                    }
                }
            });
        };
    }

    private static void describe(String path, PathItem.HttpMethod method, Operation operation) {
        ApiResponses responses = operation.getResponses() == null ? new ApiResponses() : operation.getResponses();
        operation.setResponses(responses);
        problem(responses, "400", "invalid request: a field, header or body that is not valid (named in detail)");
        problem(responses, "401", "no or wrong credentials");
        problem(responses, "403", "another tenant's path, or a role this principal lacks");
        problem(responses, "404", "unknown loan note (or path)");
        if (method == PathItem.HttpMethod.POST) {
            problem(
                            responses,
                            "409",
                            "lock busy, changed concurrently, note closed or overdue, repayment reversed,"
                                    + " request in progress")
                    .addHeaderObject(
                            "Retry-After",
                            new Header()
                                    .description("seconds to wait before retrying")
                                    .schema(new IntegerSchema()));
            problem(
                    responses,
                    "422",
                    "a rule refuses it: amount above what is owed, trade number or"
                            + " Idempotency-Key reused with other parameters, asOf after the business date");
            problem(responses, "503", "the lock store cannot be reached; nothing was changed")
                    .addHeaderObject(
                            "Retry-After",
                            new Header()
                                    .description("seconds to wait before retrying")
                                    .schema(new IntegerSchema()));
            ApiResponse ok = responses.get("200");
            if (ok != null
                    && (path.endsWith("/repayments")
                            || path.endsWith("/settlement")
                            || path.endsWith("/batch-settlement"))) {
                ok.addHeaderObject(
                        LoanController.DUPLICATE_HEADER,
                        new Header()
                                .description("true when the trade number was accepted before: the original receipt is"
                                        + " replayed and nothing was booked again")
                                .schema(new StringSchema()._enum(java.util.List.of("true"))));
            } else if (ok != null && !path.endsWith("/overdue-runs") && !path.startsWith("/api/demo")) {
                ok.addHeaderObject(
                        LoanProblems.REPLAYED,
                        new Header()
                                .description("true when the Idempotency-Key was used before: the recorded answer is"
                                        + " replayed and nothing was changed again")
                                .schema(new StringSchema()._enum(java.util.List.of("true"))));
            }
        }
    }

    private static ApiResponse problem(ApiResponses responses, String status, String description) {
        ApiResponse response = new ApiResponse()
                .description(description)
                .content(new Content()
                        .addMediaType(
                                "application/problem+json",
                                new MediaType().schema(new Schema<>().$ref("#/components/schemas/" + PROBLEM))));
        responses.addApiResponse(status, response);
        return response;
    }
}
