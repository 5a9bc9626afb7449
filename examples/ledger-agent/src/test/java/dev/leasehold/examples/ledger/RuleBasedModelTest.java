package dev.leasehold.examples.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.LocalDate;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RuleBasedModelTest {

    private static final LocalDate TODAY = LocalDate.of(2026, 11, 29);

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "中午吃粉花了35         | 35      | expense | 餐饮     | 2026-11-29",
                "salary 8000 received | 8000    | income  | 工资     | 2026-11-29",
                "taxi 30 yesterday    | 30      | expense | 交通     | 2026-11-28",
                "昨天买菜花了12.5       | 12.5    | expense | 购物     | 2026-11-28",
                "coffee 4.20          | 4.20    | expense | 餐饮     | 2026-11-29",
            })
    void oneItem(String text, String amount, String type, String category, String date) {
        List<RuleBasedModel.Item> items = RuleBasedModel.parse(text, TODAY);
        assertThat(items).hasSize(1);
        RuleBasedModel.Item item = items.get(0);
        assertThat(item.amount()).isEqualByComparingTo(amount);
        assertThat(item.type()).isEqualTo(type);
        assertThat(item.category()).isEqualTo(category);
        assertThat(item.date()).isEqualTo(LocalDate.parse(date));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {"打车30，午饭20 | 2", "lunch 20 and taxi 15 | 2", "hello there | 0"})
    void severalItemsOrNone(String text, int count) {
        assertThat(RuleBasedModel.parse(text, TODAY)).hasSize(count);
    }

    /** The amount is the whole number as typed; the booking check decides whether it can be booked. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {"taxi 30.123 | 30.123 | taxi", "taxi 1e400 | 1E+400 | taxi", "lunch 12.50 | 12.50 | lunch"})
    void theAmountIsTheWholeNumberTheUserTyped(String text, String amount, String note) {
        List<RuleBasedModel.Item> items = RuleBasedModel.parse(text, TODAY);
        assertThat(items).hasSize(1);
        assertThat(items.get(0).amount()).isEqualTo(new java.math.BigDecimal(amount));
        assertThat(items.get(0).note()).isEqualTo(note);
    }
}
