package dev.leasehold.examples.ledger;

import dev.leasehold.testkit.TestServices;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The chat with records and SQL leases on MariaDB, in a database of its own. */
class MariaDbChatTest extends AbstractChatTest {

    @DynamicPropertySource
    static void mariadb(DynamicPropertyRegistry registry) {
        TestServices.JdbcEndpoint mariadb = TestServices.mariadb();
        String server = mariadb.url().substring(0, mariadb.url().lastIndexOf('/'));
        registry.add("spring.datasource.url", () -> server + "/ledger_it?createDatabaseIfNotExist=true");
        registry.add("spring.datasource.username", mariadb::user);
        registry.add("spring.datasource.password", mariadb::password);
    }
}
