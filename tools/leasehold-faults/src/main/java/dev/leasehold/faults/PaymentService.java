package dev.leasehold.faults;

import dev.leasehold.spring.web.Idempotent;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The Spring Boot service of the crashed-service scenario ({@link CrashedService}): the Leasehold
 * starter on PostgreSQL, payments over HTTP. Started as a child JVM with {@code --server.port},
 * the private database ({@code spring.datasource.*}, {@code spring.datasource.hikari.schema}) and
 * {@code leasehold.idempotency.stale-after} and {@code leasehold.lock.lease-time} (the session
 * lease). Endpoints:
 *
 * <ul>
 *   <li>{@code POST /payments} with an {@code Idempotency-Key} header: an {@link Idempotent}
 *       payment, booked in {@code fault_payment} in the method's transaction (which also carries the
 *       request's SUCCESS mark), holding the lease of its account's session ({@code
 *       session/<account>}, taken without waiting: 409 when busy) on the starter's SQL lease store;
 *       answers 200 {@code {"key":..,"receipt":..}}
 *   <li>{@code POST /plain-payments} with the same header: the canary, the same booking in {@code
 *       fault_plain_payment} without idempotency
 *   <li>{@code GET /ready}: 200 once the service serves
 * </ul>
 *
 * A request with {@code X-Crash-After-Commit: true} prints {@code @COMMITTED key} on stdout right
 * after its transaction commits and never answers: the parent kills the JVM there ({@code kill -9}).
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
@Import(PaymentService.Payments.class)
public class PaymentService {

    /** The header that makes a request stop right after its commit. */
    public static final String CRASH_AFTER_COMMIT = "X-Crash-After-Commit";

    public static void main(String[] args) {
        SpringApplication.run(PaymentService.class, args);
    }

    /**
     * A payment to book.
     *
     * @param account the account paid into
     * @param amount the amount
     */
    public record Payment(String account, long amount) {}

    /**
     * What a booked payment answers.
     *
     * @param key the request's idempotency key
     * @param receipt the booking's receipt
     */
    public record Receipt(String key, String receipt) {}

    /** The endpoints. */
    @RestController
    public static class Payments {

        private static final ChildJvm.Io PARENT = new ChildJvm.Io();

        private final DataSource dataSource;
        private final TransactionTemplate transactions;

        public Payments(DataSource dataSource, TransactionTemplate transactions) {
            this.dataSource = dataSource;
            this.transactions = transactions;
        }

        /** Books the payment once per key: the booking commits with the request's SUCCESS mark. */
        @PostMapping("/payments")
        @Idempotent(payload = "#payment", session = "#payment.account()")
        public Receipt pay(
                @RequestHeader("Idempotency-Key") String key,
                @RequestHeader(name = CRASH_AFTER_COMMIT, defaultValue = "false") boolean crash,
                @RequestBody Payment payment)
                throws SQLException {
            return book("fault_payment", key, crash, payment);
        }

        /** The canary: books the payment every time it is sent. */
        @PostMapping("/plain-payments")
        public Receipt payPlainly(
                @RequestHeader("Idempotency-Key") String key,
                @RequestHeader(name = CRASH_AFTER_COMMIT, defaultValue = "false") boolean crash,
                @RequestBody Payment payment) {
            return transactions.execute(status -> {
                try {
                    return book("fault_plain_payment", key, crash, payment);
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
        }

        @GetMapping("/ready")
        public String ready() {
            return "ready";
        }

        /** Books on the current transaction's connection. */
        private Receipt book(String table, String key, boolean crash, Payment payment) throws SQLException {
            Connection connection = DataSourceUtils.getConnection(dataSource);
            String receipt;
            try {
                receipt = Bookings.book(connection, table, key, payment.account(), payment.amount());
            } finally {
                DataSourceUtils.releaseConnection(connection, dataSource);
            }
            if (crash) {
                TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                    @Override
                    public void afterCommit() {
                        PARENT.reply("COMMITTED " + key);
                        hangForever();
                    }
                });
            }
            return new Receipt(key, receipt);
        }

        private static void hangForever() {
            try {
                new CountDownLatch(1).await(); // the parent kills this JVM here
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
