package dev.leasehold.examples.loan;

import java.util.List;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.security.core.Authentication;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * See the guarantee: {@code POST /api/demo/storm} (an operator of the tenant) fires a mixed storm of
 * repayments, duplicates, over-balance amounts and malformed bodies at this very service over HTTP,
 * spread over the tenant's demo notes only, and answers with the report as text.
 */
@RestController
class StormController {

    private final WebServerApplicationContext server;
    private final ConcurrencyProbe probe;
    private final LoanRepository repository;

    StormController(WebServerApplicationContext server, ConcurrencyProbe probe, LoanRepository repository) {
        this.server = server;
        this.probe = probe;
        this.repository = repository;
    }

    @PostMapping(value = "/api/demo/storm", produces = "text/plain")
    String storm(
            @RequestHeader("Authorization") String authorization,
            Authentication caller,
            @RequestParam(defaultValue = DemoData.TENANT) String tenant,
            @RequestParam(required = false) List<String> notes,
            @RequestParam(defaultValue = "1000") int requests,
            @RequestParam(defaultValue = "24") int threads,
            @RequestParam(defaultValue = "1") long seed) {
        if (threads < 1 || threads > 200 || requests < 1 || requests > 20_000) {
            throw new LoanProblems.Refused(400, "invalid-request", "threads must be 1..200 and requests 1..20000");
        }
        if (!LoanSecurity.belongsTo(caller, tenant)) {
            throw new AccessDeniedException("the storm runs on the caller's own tenant only");
        }
        List<String> targets = notes == null || notes.isEmpty()
                ? repository.notes(tenant).stream()
                        .filter(Domain.Note::demo)
                        .map(Domain.Note::borrowNo)
                        .toList()
                : notes;
        if (targets.isEmpty()) {
            throw new LoanProblems.Refused(409, "no-demo-notes", "tenant " + tenant + " has no demo notes");
        }
        for (String borrowNo : targets) {
            Domain.Note note = repository
                    .find(tenant, borrowNo)
                    .orElseThrow(() -> new LoanProblems.NoteNotFound(tenant, borrowNo));
            if (!note.demo()) {
                throw new LoanProblems.Refused(
                        409,
                        "not-a-demo-note",
                        "loan note " + borrowNo + " is not a demo note; the storm books real repayments");
            }
        }
        probe.reset();
        String base = "http://127.0.0.1:" + server.getWebServer().getPort();
        StormRunner.Report report =
                StormRunner.run(base, authorization, tenant, targets, requests, threads, StormRunner.Mix.DEFAULT, seed);
        return report.text().replace("n/a (remote)", String.valueOf(probe.maxInside())) + "\n";
    }
}
