package dev.leasehold.spring;

import dev.leasehold.etcd.EtcdLeaseStore;
import dev.leasehold.spi.LeaseStore;
import io.etcd.jetcd.Client;
import java.util.List;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.ApplicationContext;

/**
 * The etcd store: on the application's {@link Client} bean if there is one (it stays the
 * application's and is not closed), else on a client created from {@code leasehold.etcd.endpoints}
 * and closed with the store.
 */
final class EtcdStores {

    private EtcdStores() {}

    static LeaseStore create(LeaseholdProperties properties, ApplicationContext context, String storeBean) {
        LeaseholdEtcdProperties etcd = properties.getEtcd();
        Client client = context.getBeanProvider(Client.class).getIfAvailable();
        if (client != null) {
            closeBefore(context, storeBean);
            return store(client, etcd);
        }
        List<String> endpoints = etcd.getEndpoints();
        if (endpoints.isEmpty()) {
            throw new IllegalStateException("leasehold.backend=etcd needs leasehold.etcd.endpoints (for example"
                    + " http://127.0.0.1:2379) or an io.etcd.jetcd.Client bean; none is configured");
        }
        Client owned = Client.builder()
                .endpoints(endpoints.toArray(String[]::new))
                .connectTimeout(etcd.getTimeout())
                .build();
        try {
            return new OwningStore(store(owned, etcd), owned);
        } catch (RuntimeException e) {
            owned.close();
            throw e;
        }
    }

    /** The store's watches end before the application's client is closed at shutdown. */
    private static void closeBefore(ApplicationContext context, String storeBean) {
        if (storeBean != null
                && context.getAutowireCapableBeanFactory() instanceof ConfigurableListableBeanFactory factory) {
            for (String client : factory.getBeanNamesForType(Client.class, false, false)) {
                factory.registerDependentBean(client, storeBean);
            }
        }
    }

    private static EtcdLeaseStore store(Client client, LeaseholdEtcdProperties etcd) {
        return EtcdLeaseStore.builder(client)
                .keyPrefix(etcd.getKeyPrefix())
                .timeout(etcd.getTimeout())
                .build();
    }
}
