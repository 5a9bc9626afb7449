package dev.leasehold.examples.loan;

import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * See the guarantee: {@code POST /api/demo/storm} fires a storm of repayments and duplicates at this
 * very service over HTTP and answers with the report as text.
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
            @org.springframework.web.bind.annotation.RequestHeader("Authorization") String authorization,
            org.springframework.security.core.Authentication caller,
            @RequestParam(defaultValue = DemoData.TENANT) String tenant,
            @RequestParam(defaultValue = "STORM-1") String borrowNo,
            @RequestParam(defaultValue = "50") int threads,
            @RequestParam(defaultValue = "10") int perThread) {
        if (threads < 1 || threads > 200 || perThread < 1 || perThread > 1000) {
            throw new LoanProblems.Refused(400, "invalid-request", "threads must be 1..200 and perThread 1..1000");
        }
        if (!LoanSecurity.belongsTo(caller, tenant)) {
            throw new org.springframework.security.access.AccessDeniedException(
                    "the storm runs on the caller's own tenant only");
        }
        Domain.Note note =
                repository.find(tenant, borrowNo).orElseThrow(() -> new LoanProblems.NoteNotFound(tenant, borrowNo));
        if (!note.demo()) {
            throw new LoanProblems.Refused(
                    409,
                    "not-a-demo-note",
                    "loan note " + borrowNo + " is not a demo note; the storm books real repayments");
        }
        probe.reset();
        String base = "http://127.0.0.1:" + server.getWebServer().getPort();
        StormRunner.Report report = StormRunner.run(base, authorization, tenant, borrowNo, threads, perThread, -1);
        return report.text().replace("n/a (remote)", String.valueOf(probe.maxInside())) + "\n";
    }
}
