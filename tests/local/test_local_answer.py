"""The grounded-answer grammar and field binding of the embedded model (no model)."""

from __future__ import annotations

import re

import pytest

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.providers import local_answer as la
from loopwright.providers import local_veto as lv

WEATHER = (
    '{"city": "Mumbai", "temperature_c": 14, "humidity_pct": 35, "wind_kph": 29,'
    ' "source": "demo data, not a real forecast"}'
)


def _history(question: str, *results: str) -> list[Message]:
    return [Message.user(question)] + [
        Message.tool_results([ToolResultPart(f"c{i}", "t", r)]) for i, r in enumerate(results)
    ]


def test_grounding_collects_result_and_question_numbers_of_the_current_turn() -> None:
    old = _history("What is 1 + 1?", "2")
    ground = la.grounding([*old, *_history("What is 45 * 12?", "540")])
    assert ground.results == ("540",)
    assert ground.question == ("45", "12")
    assert ground.allowed == ("540", "45", "12")


def test_grounding_ignores_failed_results() -> None:
    failed = Message.tool_results([ToolResultPart("c", "t", "error 500", True, "transient")])
    assert la.grounding([Message.user("q"), failed]).results == ()


def test_fields_pair_key_words_with_numbers_including_tables() -> None:
    ground = la.grounding(_history("q", WEATHER))
    assert ("humidity", "35") in ground.fields and ("temperature", "14") in ground.fields
    table = '{"columns": ["name", "salary"], "rows": [["Ana", 5000]]}'
    assert ("salary", "5000") in la.grounding(_history("q", table)).fields
    assert la.key_words("windSpeedKph") == ["wind", "speed", "kph"]


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        (' {"answer": "The humidity in Mumbai is ', "35"),
        (' {"answer": "It is windy: ', "29"),  # "windy" names wind_kph
        (' {"answer": "The temperature is 14 and the humidity is ', "35"),
        (' {"answer": "The temperature is ', "14"),
        (' {"answer": "In Mumbai it is ', None),  # no field named since the last number
        (' {"answer": "The humidity is 35 and it is ', None),
    ],
)
def test_field_binder_binds_a_number_to_the_field_just_named(text: str, bound: str | None) -> None:
    binder = la.FieldBinder(la.grounding(_history("q", WEATHER)).fields)
    assert binder(text) == bound


def test_answer_grammar_allows_only_context_numbers_and_requires_a_result() -> None:
    gbnf = la.answer_grammar(la.Grounding(("540",), ("45", "12")))
    assert 'num ::= "540" | "45" | "12"' in gbnf
    assert 'rnum ::= "540"' in gbnf
    # Free characters hold no digit (numbers come from num only), no look-alike and
    # nothing outside ASCII ("°" only right after a number).
    free = la._FREE.encode().decode("unicode_escape")
    assert not any(ch.isdigit() or ch in '.!?"\\{}°' for ch in free if ch not in "[]-")
    assert all(ord(ch) < 128 for ch in free)
    assert "c ::= " + la._FREE in gbnf
    assert 'x ::= c | num "°"? c' in gbnf
    no_results = la.answer_grammar(la.Grounding((), ()))
    assert "num" not in no_results and "rlabel" not in no_results


def test_a_label_of_the_result_counts_as_its_value() -> None:
    """A yes/no or which-one question is answered by a word of the result ("cloudy",
    "Oslo"), not by one of its numbers: the first sentence may state either, but not
    a word the question already uses."""
    history = _history("Is it raining in Lima?", WEATHER.replace("Mumbai", "Lima"))
    ground = la.grounding(history)
    assert "Lima" not in ground.labels and "demo" in ground.labels
    assert "forecast" in ground.labels and "not" not in ground.labels
    table = '{"columns": ["city"], "rows": [["Oslo"]], "row_count": 1}'
    ground = la.grounding(_history("Which city does Dana live in?", table))
    assert ground.labels == ("Oslo",)  # column names are not values
    gbnf = la.answer_grammar(ground)
    # the question asks for the city column: its value, not the row count
    assert "rnum ::=" not in gbnf and 'rlabel ::= "Oslo"' in gbnf
    # A dotted name is one value: "example" alone does not state "example.internal".
    ini = la.grounding(_history("What is the host in config.ini?", "host = example.internal"))
    assert ini.labels == ("example.internal",)


@pytest.mark.parametrize("sentences", [1, 2])
def test_answer_grammar_compiles(sentences: int, capfd: pytest.CaptureFixture[str]) -> None:
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    grounds = [
        la.Grounding(("540", "-3.5"), ("45",)),
        la.Grounding(("8", "64"), ("3", "5"), (("total", "64"),), ("64",)),
        la.Grounding(("7",), (), (), ("7",)),
        la.Grounding(),
    ]
    for ground in grounds:
        text = la.answer_grammar(ground, max_sentences=sentences)
        grammar.LlamaGrammar.from_string(text, verbose=False)
    # The C parser runs when a sampler is built (needs the model): see
    # tests/embedded/test_embedded_local.py::test_answer_grammars_parse_in_llama_cpp.
    assert "error" not in capfd.readouterr().err


def test_untrusted_wrapped_results_are_read_by_their_content() -> None:
    from loopwright.core.untrusted import wrap_tool_result
    from loopwright.providers import local_prompt as lp
    from loopwright.strategies.embedded.grounded import current_turn

    wrapped = wrap_tool_result('{"columns": ["COUNT(*)"], "rows": [[7]]}', "sql_query")
    history = _history("How many orders?", wrapped)
    ground = la.grounding(history)
    assert ground.results == ("7",)  # the nonce's digits are not numbers of the result
    rendered = lp.render_message(history[1])
    assert rendered == '\nResult: {"columns": ["COUNT(*)"], "rows": [[7]]}'
    assert current_turn(history).results[0].content.startswith('{"columns"')


def test_the_first_sentence_states_the_latest_result() -> None:
    """After a chain (add -> 8, multiply -> 64) the answer must state 64, not 8; the
    first step's result may still appear before it."""
    history = _history("What is (3 + 5) * 8?", "8", "64")
    ground = la.grounding(history)
    assert ground.latest == ("64",) and set(ground.results) == {"8", "64"}
    gbnf = la.answer_grammar(ground)
    assert 'rnum ::= "64"' in gbnf
    assert 'num ::= "64" | "8" | "3" | "5"' in gbnf


@pytest.mark.parametrize(
    ("text", "repeats"),
    [("--", True), ("a °°", True), ("$$40", True), ("(3 + 5) * 8 = 64.", False), (")).", True)],
)
def test_symbol_runs_are_detected(text: str, repeats: bool) -> None:
    """The answer sampler refuses a sign written twice in a row ("-----", "° °" is
    allowed: a space separates them); see local_sampler ``no_symbol_runs``."""
    from loopwright.providers.local_sampler import _repeats_symbol

    assert _repeats_symbol(text) is repeats


def test_a_formula_the_tool_received_is_quoted_verbatim() -> None:
    """'What is (3 + 5) * 8?': the calculator got '(3 + 5) * 8' and the model began its
    answer with '3', heading for '3 + 5 * 8 = 64.'. The guide writes the formula the
    tool received instead, once."""
    from loopwright.providers.scripted import tool_call

    history = [
        Message.user("What is (3 + 5) * 8?"),
        Message("assistant", (tool_call("calculator", {"expression": "(3 + 5) * 8"}, id="c0"),)),
        Message.tool_results([ToolResultPart("c0", "calculator", "64")]),
    ]
    ground = la.grounding(history)
    assert ground.formulas == ("(3 + 5) * 8",)
    guide = la.answer_guide(ground, "What is (3 + 5) * 8?")
    assert guide is not None
    assert guide(' {"answer": "', "3") == "(3 + 5) * 8"
    assert guide.quoter(' {"answer": "(3 + 5) * 8 = ', "6") is None  # written already
    assert guide(' {"answer": "(3 + 5) * 8 = ', "6") == "64"  # the equation's value
    assert guide(' {"answer": "The result is ', "6") is None  # not the formula's start
    # Arguments that are not formulas are not quoted; neither are plain numbers.
    city = [Message.user("q"), Message("assistant", (tool_call("w", {"city": "Oslo 2"}),))]
    assert la.grounding(city).formulas == ()


@pytest.mark.parametrize(
    ("text", "piece", "refused"),
    [
        ("(3 + 5) * 8 = 64", " 64", True),
        ("1000 / 8 = 125", "/", True),
        ("(3 + 5) * 8 = 64", ".", False),
        ("(3 + 5) * 8 = 6", "4", False),
        ("(3 + 5) * 8 = 64", '"', False),
        ("It is 64", " degrees", False),  # not an equation
    ],
)
def test_an_equation_ends_its_sentence_at_its_value(text: str, piece: str, refused: bool) -> None:
    assert lv.runs_past_equation(' {"answer": "' + text, piece) is refused


def test_the_first_number_takes_the_field_the_question_names_with_its_unit() -> None:
    """'How windy is it in Oslo?' answered 'It is 6 degrees F.' (the temperature);
    then, with the wind's number bound, 'It is 22 degrees Celsius.'. An answer that
    names no field takes the question's field and its key's unit."""
    history = _history("How windy is it in Mumbai?", WEATHER)
    ground = la.grounding(history)
    assert ("wind", "kph") in ground.units and ("humidity", "pct") in ground.units
    guide = la.answer_guide(ground, "How windy is it in Mumbai?")
    assert guide is not None
    assert guide(' {"answer": "It is ', "1") == "29 kph"
    assert guide(' {"answer": "The humidity is ', "1") == "35 pct"
    # Once a number is written, the question no longer binds.
    assert guide(' {"answer": "In Mumbai 14 and ', "2") is None


def test_a_number_right_after_a_letter_is_a_number_of_the_result() -> None:
    """mcp-server-time returned 2026-11-24T10:33 and the answer said 'T11:33': 10 was
    not an allowed number (it follows a letter), 11 (the month) was."""
    ground = la.grounding(_history("What time is it in Tokyo?", '{"datetime": "2026-11-24T10:33"}'))
    assert "10" in ground.results


def test_a_column_number_is_taken_from_the_row_the_question_names() -> None:
    """'How many chairs are in stock?' after SELECT * answered 'There are 5 chairs' (the
    desk's stock): the stock column has three numbers; the row named 'chair' has one."""
    table = (
        '{"columns": ["name", "price", "stock"],'
        ' "rows": [["lamp", 40, 3], ["chair", 85, 12], ["desk", 240, 5]]}'
    )
    question = "How many chairs are in stock? Look in the products table."
    ground = la.grounding(_history(question, table))
    assert la.Record(("chair",), (("price", "85"), ("stock", "12"))) in ground.records
    guide = la.answer_guide(ground, question)
    assert guide is not None
    assert guide(' {"answer": "There are ', "5") == "12"
    assert guide(' {"answer": "The desk costs 240 and its stock is ', "3") == "5"
    # No row named (or two rows named): the model chooses among the column's numbers.
    assert guide(' {"answer": "The stock is ', "3") == "12"  # the question's row
    other = la.answer_guide(ground, "How many items are in stock?")
    assert other is not None and other(' {"answer": "There are ', "5") is None
    both = la.answer_guide(ground, "Stock of lamps and desks?")
    assert both is not None and both(' {"answer": "There are ', "5") is None


def test_an_equation_states_the_latest_result() -> None:
    """After add(10, 6) -> 16 and divide(16, 4) -> 4 the answer read '(10 + 6) / 4 =
    16.' (the first step's result): after an equals sign the sampler writes the latest
    result when it is one number."""
    history = [*_history("What is (10 + 6) / 4?", "16"), *_history("", "4")[1:]]
    ground = la.grounding(history)
    assert ground.latest == ("4",)
    guide = la.answer_guide(ground, "What is (10 + 6) / 4?")
    assert guide is not None
    assert guide(' {"answer": "(10 + 6) / 4 = ', "1") == "4"
    assert guide(' {"answer": "(10 + 6) / 4 =', "1") == "4"
    assert guide(' {"answer": "It is ', "1") is None  # not after an equals sign
    weather = la.answer_guide(la.grounding(_history("q", WEATHER)), "q")
    assert weather is not None and weather(' {"answer": "x = ', "1") is None  # several


def test_no_yes_to_a_question_word_no_result_states() -> None:
    """'Is it raining in Lima?' (the result says sunny) was answered 'Yes, it is
    raining'. The answer's first word may not be "Yes" while the question has a word
    no result states; elsewhere, and when every word is stated, "Yes" is free."""
    lima = WEATHER.replace("Mumbai", "Lima").replace("demo data", "sunny, demo data")
    veto = lv.answer_veto(la.grounding(_history("Is it raining in Lima?", lima)))
    assert veto.unstated == ("raining",)
    head = ' {"answer": "'
    assert veto(head, "Yes")
    assert veto(head[:-1], ' "Yes')
    assert veto(head + "Y", "es,")
    assert not veto(head, "It")
    assert not veto(head, "Yesterday")
    assert not veto(head + "It is sunny, ", "yes")
    stated = lv.answer_veto(la.grounding(_history("Is it sunny in Lima?", lima)))
    assert stated.unstated == () and not stated(head, "Yes")
    # The equation stop still applies.
    assert veto(head + "3 + 5 = 8", " 8")


def test_no_field_named_after_a_number_that_is_not_its_value() -> None:
    """'What's the weather in Beijing?' (humidity 62, wind 30) was answered '30 percent
    humidity, and 62 pct wind speed'. A field's name right after a number (and at most
    one unit word) must be that number's field."""
    beijing = '{"city": "Beijing", "temperature_c": 26, "humidity_pct": 62, "wind_kph": 30}'
    veto = lv.answer_veto(la.grounding(_history("What's the weather in Beijing?", beijing)))
    head = ' {"answer": "It is 26 degrees, '
    assert veto(head + "30 percent", " humidity")
    assert veto(head + "30 percent hum", "idity")
    assert not veto(head + "62 percent", " humidity")
    assert not veto(head + "62", " pct")
    assert veto(head + "62 pct", " wind")
    assert not veto(head + "30 kph", " wind")
    assert not veto(head + "62% humidity and 30", " kph")
    assert not veto(head + "30", " and")  # not a field's name
    assert veto(head + "30", " degrees")  # but read in kph: see the unit rule
    assert not veto(head + "62% humidity, ", "wind")  # no number right before


LIMA = (
    '{"city": "Lima", "temperature_c": 12, "condition": "sunny", "humidity_pct": 51,'
    ' "wind_kph": 22, "source": "demo data, not a real forecast"}'
)


def test_a_yes_no_claim_no_result_states_is_written_only_denied() -> None:
    """'Is it raining in Lima?' (sunny) was answered 'It is raining in Lima' and, with
    "Yes" refused, 'It is not raining in Lima, it is snowing'. The question's claim no
    result states may be written only negated; once the sentence has denied it, what
    follows is in the words of the question and the results (or function words)."""
    ground = la.grounding(_history("Is it raining in Lima?", LIMA))
    assert ground.claims == ("raining",)
    veto = lv.answer_veto(ground)
    head = ' {"answer": "It is'
    assert veto(head, " raining")
    assert veto(head, " rainy")
    assert not veto(head + " not", " raining")
    denied = head + " not raining in Lima, it is"
    assert veto(denied, " snowing")
    assert veto(denied, " snow")
    assert veto(denied, " windy")  # the key's word "wind" does not start "windy"
    assert not veto(denied, " sunny")
    assert not veto(denied + " sunny and", " the")
    assert veto(denied + " sunny. It is", " raining")  # a new sentence: not negated
    # A question that asks no yes/no has no claims; a stated one is none either.
    assert la.grounding(_history("What is the weather in Lima?", LIMA)).claims == ()
    assert la.grounding(_history("Is it sunny in Lima?", LIMA)).claims == ()
    used = la.grounding(_history("Use the weather tool. Is it raining in Lima?", LIMA))
    assert used.claims == ("raining",)  # "use" and "tool" are not part of the claim


def test_a_yes_no_claim_makes_the_first_sentence_state_a_word_of_the_result() -> None:
    """With a claim no result states, the first sentence must state a word of the
    result (not only a number: "it is raining 12 degrees") within a short clause."""
    gbnf = la.answer_grammar(la.grounding(_history("Is it raining in Lima?", LIMA)))
    assert "rnum ::=" not in gbnf and '| "sunny" |' in gbnf
    assert f"x{{0,{la.MAX_CLAIM_ITEMS}}}" in gbnf
    plain = la.answer_grammar(la.grounding(_history("What is the weather in Lima?", LIMA)))
    assert "rnum ::=" in plain and f"x{{0,{la.MAX_SENTENCE_ITEMS}}}" in plain


CUSTOMERS = (
    '{"columns": ["id", "name", "city"], "rows": [[1, "Ana", "Berlin"], [2, "Bo", "Paris"],'
    ' [3, "Chen", "Berlin"], [4, "Dana", "Oslo"]], "row_count": 4}'
)


def test_a_question_naming_a_row_keeps_other_rows_out_of_the_answer() -> None:
    """'Which city does Dana live in?' after every customer's row was answered 'The
    city is Berlin' (the first row) and 'Ana is in Berlin, ...'. The first sentence
    states a value of the named row, and no other row's words are written (a glued
    "inBerlin" included)."""
    ground = la.grounding(_history("Which city does Dana live in?", CUSTOMERS))
    # the row's id (4) is not a value to state: "Bo ... is in 2nd place" passed for Bo's
    assert ground.labels == ("Oslo",) and ground.latest == () and ground.by_label
    assert set(ground.others) == {"ana", "berlin", "paris", "chen"}
    veto = lv.answer_veto(ground)
    head = ' {"answer": "The city is'
    assert veto(head, " Berlin")
    assert veto(head + " Ber", "lin")
    assert veto(head + " in", "Berlin")
    assert not veto(head, " Oslo")
    assert not veto(head, " bern")  # only whole words of other rows
    assert veto(head, " Bern")  # (a name no result gives: see the next test)
    # Every row named, or none: nothing is kept out.
    berlin = la.grounding(_history("How many customers live in Berlin?", CUSTOMERS))
    assert set(berlin.others) == {"paris", "dana", "oslo"}
    assert la.grounding(_history("How many customers are there?", CUSTOMERS)).others == ()
    assert la.grounding(_history("Compare Berlin, Paris and Oslo.", CUSTOMERS)).others == ()


def test_a_number_before_a_text_word_is_the_number_the_text_gives_it() -> None:
    """A file saying "2 eggs, ... 3 minutes per side" was answered "2 minutes per
    side". The words right after a number in a result's text are what it counts."""
    recipe = "Pancakes: 200 g flour, 2 eggs, 300 ml milk. Cook for 3 minutes per side."
    ground = la.grounding(_history("How long do pancakes cook?", recipe))
    assert ("minutes", "3") in ground.pairs and ("flour", "200") in ground.pairs
    assert ("for", "3") not in ground.pairs  # function words count nothing
    veto = lv.answer_veto(ground)
    head = ' {"answer": "Cook them for '
    assert veto(head + "2", " minutes")
    assert veto(head + "2", " min")
    assert not veto(head + "3", " minutes")
    assert veto(head + "2 g", " flour") and not veto(head + "200 g", " flour")
    assert not veto(head + "2", " eggs")
    assert not veto(head + "2", " days")  # a word the text does not count: free


def test_an_answer_does_not_open_with_a_question_word() -> None:
    """'Which port is set in config.ini?' was answered 'Which port is set in config:
    8080': the answer restated the question."""
    veto = lv.answer_veto(la.grounding(_history("Which port is set?", "port = 8080")))
    head = ' {"answer": "'
    assert veto(head, "Which")
    assert veto(head, "What")
    assert veto(head + "How", " ")
    assert not veto(head, "The")
    assert not veto(head, "Whoever")
    assert not veto(head + "The port, which", " is")


def test_no_equals_sign_without_a_formula() -> None:
    """Read from a file, "Bread: 3 eggs, 500 g flour = 3." equated a count to a weight:
    "=" is written only when a call or the question holds a formula."""
    bread = "Bread: 3 eggs, 500 g flour. Bake for 40 minutes."
    veto = lv.answer_veto(la.grounding(_history("How long does the bread bake?", bread)))
    head = ' {"answer": "Bread: 3 eggs, 500 g flour'
    assert veto(head, " =") and not veto(head, ",")
    asked = lv.answer_veto(la.grounding(_history("What is (3 + 5) * 8?", "8", "64")))
    assert not asked(' {"answer": "(3 + 5) * 8', " =")
    called = [
        Message.user("Subtract 199 from 1024."),
        Message("assistant", (ToolCallPart("c0", "calculator", {"expression": "1024 - 199"}),)),
        Message.tool_results([ToolResultPart("c0", "calculator", "825")]),
    ]
    assert not lv.answer_veto(la.grounding(called))(' {"answer": "1024 - 199', " =")


def test_an_answer_picking_a_named_row_opens_with_its_name() -> None:
    """'Which city does Dana live in?' after every customer's row: with other rows'
    words refused the model wrote 'The city is in the city of Dana in the United
    States'. Picking one row out of several by a name, the answer opens with it."""
    ground = la.grounding(_history("Which city does Dana live in?", CUSTOMERS))
    assert ground.subject == "Dana"
    veto = lv.answer_veto(ground)
    head = ' {"answer":'
    assert veto(head, ' "The') and veto(head, ' "Ana')
    assert not veto(head, ' "Dana') and not veto(head, ' "D') and not veto(head + ' "D', "ana")
    assert not veto(head + ' "Dana', " lives")
    # No name, several rows named, or a name at the sentence start: no subject.
    assert la.grounding(_history("How many customers live in Berlin?", CUSTOMERS)).subject == ""
    assert la.grounding(_history("Dana lives where?", CUSTOMERS)).subject == ""
    products = '{"columns": ["name", "price"], "rows": [["lamp", 40], ["chair", 85]]}'
    lamp = la.grounding(_history("What does the lamp cost?", products))
    assert lamp.subject == "" and lamp.others == ("chair",)
    assert lv.answer_veto(lamp)(' {"answer": "Two', " chairs")  # a plural too


def test_a_question_word_starting_a_key_names_its_field() -> None:
    """ "How humid is it?" names ``humidity_pct`` as "windy" names ``wind_kph``: the
    answer's first number is that field's (a start of the key of four letters or more;
    "hot" names none)."""
    for question, bound in [
        ("How humid is it in Mumbai?", "35 pct"),
        ("What is the temp in Mumbai?", "14"),
        ("How windy is Mumbai?", "29 kph"),
        ("How hot is Mumbai?", None),
    ]:
        guide = la.answer_guide(la.grounding(_history(question, WEATHER)), question)
        assert guide is not None
        assert guide(' {"answer": "It is ', "1") == bound, question


def test_a_short_name_names_its_row() -> None:
    """Row names shorter than three letters ("Bo") were never taken as naming a row,
    so the answer could state any row's city."""
    ground = la.grounding(_history("Where does Bo live? See the customers table.", CUSTOMERS))
    assert ground.subject == "Bo" and ground.labels == ("Paris",)
    assert "berlin" in ground.others and "paris" not in ground.others
    # Lower-case short words name no row: "it", "is" could be any table's values.
    assert la.grounding(_history("where does bo live?", CUSTOMERS)).subject == ""


def test_yes_is_free_when_the_yes_no_question_itself_is_stated() -> None:
    """ "Is the lamp in stock? Use the products table." had "Yes" refused: "use",
    "products" and "table" are stated by no result, but they are not what a "Yes"
    claims. Without a yes/no question the whole message counts."""
    products = '{"columns": ["name", "stock"], "rows": [["lamp", 3], ["chair", 0]]}'
    ground = la.grounding(_history("Is the lamp in stock? Use the products table.", products))
    assert ground.unstated == () and ground.claims == ()
    assert not lv.answer_veto(ground)(' {"answer": "', "Yes")
    told = la.grounding(_history("Tell me if it is raining in Lima.", LIMA))
    assert "raining" in told.unstated and told.claims == ()
    assert lv.answer_veto(told)(' {"answer": "', "Yes")


def test_an_answer_no_does_not_negate_the_claim_after_it() -> None:
    """'Does Chen live in Paris?' (Chen's row says Berlin) was answered 'No, Chen lives
    in Paris': the answer's "No," counted as negating "lives". Only a negation of the
    words after it ("not", "no rain") does."""
    ground = la.grounding(_history("Does Chen live in Paris? Check the table.", CUSTOMERS))
    assert ground.claims == ("live",)
    veto = lv.answer_veto(ground)
    assert veto(' {"answer": "No, Chen', " lives")
    assert not veto(' {"answer": "No, Chen does not', " live")
    lima = lv.answer_veto(la.grounding(_history("Is it raining in Lima?", LIMA)))
    assert not lima(' {"answer": "There is no', " rain")
    assert lima(' {"answer": "No. It is', " raining")


def test_how_many_rows_a_question_names_is_the_value_to_state() -> None:
    """'How many customers live in Berlin?' after every customer's row was answered
    'There are 4 customers in Berlin' (the row count). Two rows name Berlin: 2 is the
    number to state, and may be written though no result writes it."""
    ground = la.grounding(_history("How many customers live in Berlin?", CUSTOMERS))
    assert ground.latest == ("2",) and ground.labels == ()
    assert ground.allowed == ("2",)
    # held to it, the model wrote it again and again ("There are 2,2,2 customers")
    veto = lv.answer_veto(ground)
    assert veto(' {"answer": "There are 2,', "2") and veto(' {"answer": "There are 2, ', "2")
    assert not veto(' {"answer": "There are 2', " customers")
    assert not lv.repeats_number("It is 12, ", "13") and lv.repeats_number("12,", "1")
    one = la.grounding(_history("How many customers live in Oslo?", CUSTOMERS))
    assert one.latest == ("1",) and one.allowed == ("1",)
    # the counted word names the row: its number is asked, not a count
    products = '{"columns": ["name", "stock"], "rows": [["chair", 12], ["desk", 5]]}'
    chairs = la.grounding(_history("How many chairs are in stock?", products))
    assert chairs.latest == ("12",)


def test_a_number_a_text_pairs_with_a_question_word_is_the_value_to_state() -> None:
    """'How many tests failed according to status.txt?' was answered 'Build 512
    passed.': the number the text writes before "tests failed" is the one to state."""
    text = "Build 512 passed. 0 tests failed."
    ground = la.grounding(_history("How many tests failed according to status.txt?", text))
    assert ground.latest == ("0",) and ground.labels == ()
    both = la.grounding(_history("How many tests passed or failed?", text))
    assert set(both.latest) == {"512", "0"}  # two candidates: the model chooses


def test_the_list_item_a_question_names_by_position_is_the_one_to_state() -> None:
    """'What is the second item in todo.txt?' was answered 'buy milk' (the first)."""
    todo = "1. Buy milk\n2. Call the plumber\n3. Renew the passport\n"
    ground = la.grounding(_history("What is the second item in todo.txt?", todo))
    assert ground.labels == ("Call", "plumber") and ground.latest == ()
    # the first sentence states a word of the item, not a number (its position)
    assert ground.by_label and "rnum" not in la.answer_grammar(ground)
    assert ground.allowed == ()
    last = la.grounding(_history("What is the last item in todo.txt?", todo))
    assert last.labels == ("Renew", "passport")
    plain = la.grounding(_history("What does todo.txt say?", todo))
    assert not plain.by_label and "Buy" in plain.labels


def test_a_number_read_in_a_unit_is_followed_by_that_unit() -> None:
    """'The weather in Lisbon today is 25 degrees Celsius, 72 degrees Fahrenheit' for
    ``humidity_pct: 72``: after a number whose field gives a unit, the next word is
    that unit or a word of the field's key."""
    report = (
        '{"city": "Lisbon", "temperature_c": 25, "condition": "sunny", "humidity_pct": 72,'
        ' "wind_kph": 10, "source": "demo data, not a real forecast"}'
    )
    veto = lv.answer_veto(la.grounding(_history("What's the weather in Lisbon today?", report)))
    head = ' {"answer": "It is 25 degrees Celsius, 72'
    assert veto(head, " degrees") and veto(head, " Fahrenheit")
    assert not veto(head, " pct") and not veto(head, "%") and not veto(head, " humidity")
    assert not veto(' {"answer": "It is 25', " degrees")  # temperature_c: no unit word
    assert veto(' {"answer": "The wind is 10', " knots")
    assert not veto(' {"answer": "The wind is 10', " kph")
    # "row_count": 4 counts rows of anything: not a unit ("There are 4 customers")
    table = '{"columns": ["id"], "rows": [[1], [2], [3], [4]], "row_count": 4}'
    rows = lv.answer_veto(la.grounding(_history("How many customers are there?", table)))
    assert not rows(' {"answer": "There are 4', " customers")


def test_naming_one_row_the_answer_names_nothing_the_context_does_not() -> None:
    """'Which city is Bo from?' was answered 'Bo from the city of Copenhagen' (Paris in
    the result): with one row named, a capitalized word inside a sentence starts a
    word of the question or the results."""
    ground = la.grounding(_history("Which city is Bo from? Use the customers table.", CUSTOMERS))
    assert ground.subject == "Bo" and "paris" in ground.names
    veto = lv.answer_veto(ground)
    head = ' {"answer": "Bo is from the city of'
    assert veto(head, " Copenhagen") and veto(head, " Cop")
    assert not veto(head, " Paris") and not veto(head, " Par") and not veto(head, " the")
    assert not veto(head + " Paris.", " Copenhagen")  # a sentence's first word
    # no row named: names are not checked (the weather's "degrees Celsius")
    assert (
        la.grounding(_history("What is the weather in Oslo?", '{"temperature_c": 5}')).names == ()
    )


def test_a_quoted_formula_is_not_extended() -> None:
    """'((250 + 375) * 2) / 2 = 1250.': after the formula the calls computed (and the
    parentheses closing it), no operator or number follows."""
    assert lv.runs_past_formula(' {"answer": "((250 + 375) * 2)', " /", ("(250 + 375) * 2",))
    assert lv.runs_past_formula(' {"answer": "45 * 12', " 2", ("45 * 12",))
    assert not lv.runs_past_formula(' {"answer": "((250 + 375) * 2)', " =", ("(250 + 375) * 2",))
    assert not lv.runs_past_formula(' {"answer": "45 * 1', "2", ("45 * 12",))
    assert not lv.runs_past_formula(
        ' {"answer": "3 to the power of 5', " is", ("3 to the power of 5",)
    )


def test_the_numbers_of_a_formula_the_calls_sent_may_be_quoted() -> None:
    """'What is the square root of 144?' called ``144 ** (1 / 2)``: the answer could
    not write 1 and 2 (in no result, not in the question), and ran to the token cap."""
    history = [
        Message.user("What is the square root of 144?"),
        Message(
            "assistant",
            (ToolCallPart("c0", "calculator", {"expression": "144 ** (1 / 2)"}),),
        ),
        Message.tool_results([ToolResultPart("c0", "calculator", "12")]),
    ]
    ground = la.grounding(history)
    assert {"1", "2", "144", "12"} <= set(ground.allowed)


def test_a_formula_is_quoted_when_the_answer_starts_any_of_its_numbers() -> None:
    """'Deduct 30 from 95.' called ``95 - 30`` and was answered '30 - 95 - 30 = 65': the
    model started with the request's first number, which the formula holds later."""
    quoter = la.FormulaQuoter(("95 - 30",))
    assert quoter(' {"answer": "', "3") == "95 - 30"
    assert quoter(' {"answer": "', "9") == "95 - 30"
    assert quoter(' {"answer": "', "6") is None  # the result: not the formula's
    assert quoter(' {"answer": "95 - 30 = ', "6") is None  # already written


def test_no_formula_after_the_question_words_that_state_it() -> None:
    """'What is half of 346?' was answered 'Half of 346 / 2 = 173.' (read: half of
    173): after the question's own words for a number the answer writes that number,
    not the formula in symbols."""
    quoter = la.FormulaQuoter(("346 / 2",), "What is half of 346?")
    assert quoter(' {"answer": "Half of ', "3") is None
    assert quoter(' {"answer": "If I split ', "3") == "346 / 2"  # not the question's words
    assert quoter(' {"answer": "', "3") == "346 / 2"
    split = la.FormulaQuoter(("96 / 4",), "If I split 96 into 4 parts, how big is each?")
    assert split(' {"answer": "If I split ', "9") is None
    asked = la.FormulaQuoter(("45 * 12",), "What is 45 * 12?")
    assert asked(' {"answer": "What is ', "4") == "45 * 12"  # asking words state nothing


def test_a_label_is_stated_as_a_whole_word() -> None:
    """'What's it like outside in Seoul?' was answered '..., but it's really nice.': the
    label "real" (of "not a real forecast") at the start of "really" passed for a
    stated value. A label is followed by one of a word's endings at most."""
    report = '{"city": "Seoul", "condition": "foggy", "source": "not a real forecast"}'
    gbnf = la.answer_grammar(la.grounding(_history("What's it like in Seoul?", report)))
    assert f"rlabel {la._ENDINGS}? (end | {la._NOT_LETTER} " in gbnf
    assert '"ly"' not in la._ENDINGS  # "real" + "ly" is another word
    assert "x41" not in la._NOT_LETTER and "x61" not in la._NOT_LETTER  # no letters


def test_numbers_listed_with_no_field_named_are_labelled() -> None:
    """'What's the weather there now?' was answered 'The weather there is now: 25, 72.':
    a number listed after ': ' or ', ' with no field named is written with its field's
    word and unit, the next field not yet stated."""
    report = '{"city": "Lisbon", "temperature_c": 25, "humidity_pct": 72, "wind_kph": 10}'
    ground = la.grounding(_history("What's the weather there now?", report))
    guide = la.answer_guide(ground, "What's the weather there now?")
    assert guide is not None
    assert guide(' {"answer": "The weather is now: ', "2") == "temperature 25"
    assert guide(' {"answer": "It is now: temperature 25, ', "2") == "humidity 72 pct"
    assert guide(' {"answer": "It is now: temperature 25, ', "1") == "wind 10 kph"
    assert guide(' {"answer": "It is rainy, humidity: ', "7") == "72 pct"  # the binder's
    assert guide(' {"answer": "It is ', "2") is None  # not a list
    # a field named before the list's comma is the binder's ("humid there, 72 pct")
    assert guide(' {"answer": "It is humid there, ', "2") == "72 pct"
    # the question asks one field: the others are not listed after it
    humid = la.grounding(_history("How humid is it there?", report))
    asked = la.answer_guide(humid, "How humid is it there?")
    assert asked is not None
    assert not (asked(' {"answer": "It is humid there, 72 pct, ', "1") or "").startswith("wind")


def test_a_number_is_made_a_percentage_only_where_percentages_are_spoken_of() -> None:
    """'How much is the lamp?' over its row was answered 'The lamp is 40% of the
    price.': nothing there is a percentage."""
    lamp = '{"columns": ["name", "price", "stock"], "rows": [["lamp", 40, 3]]}'
    veto = lv.answer_veto(la.grounding(_history("How much is the lamp?", lamp)))
    assert veto(' {"answer": "The lamp is 40', "%")
    assert veto(' {"answer": "The lamp is 40', " percent")
    assert not veto(' {"answer": "The lamp is 40', " dollars")
    asked = lv.answer_veto(la.grounding(_history("What is 20% of 200?", "40")))
    assert not asked(' {"answer": "20', "%")
    humid = '{"city": "Lima", "humidity_pct": 72}'
    assert not lv.answer_veto(la.grounding(_history("How humid?", humid)))(" 72", "%")


def test_a_table_column_is_not_listed_as_one_field() -> None:
    rows = '{"columns": ["name", "price"], "rows": [["lamp", 40], ["desk", 240]]}'
    ground = la.grounding(_history("List the products.", rows))
    assert la.FieldBinder(ground.fields, "", ground.units).listed("Products: ", "4") is None


def test_a_question_naming_one_field_keeps_the_other_fields_out() -> None:
    """'How humid is it in Bangkok?' was answered 'The temperature in Bangkok is 11
    degrees Celsius.': the other numeric fields' names are not written."""
    report = '{"city": "Bangkok", "temperature_c": 11, "humidity_pct": 51, "wind_kph": 10}'
    ground = la.grounding(_history("How humid is it in Bangkok?", report))
    assert set(ground.others) == {"temperature", "wind", "kph"}
    veto = lv.answer_veto(ground)
    assert veto(' {"answer": "The', " temperature")
    assert not veto(' {"answer": "The', " humidity")
    assert la.grounding(_history("What's the weather in Bangkok?", report)).others == ()


def test_a_yes_no_question_the_text_answers_plainly_opens_the_answer() -> None:
    """'Did any tests fail according to status.txt?' was answered 'No tests passed.' and
    'Yes ...' over "Build 512 passed. 0 tests failed.": when the text answers the
    question plainly (``core.polarity.verdict``), the answer opens with that word."""
    status = "Build 512 passed. 0 tests failed."
    failed = la.grounding(_history("Did any tests fail according to status.txt?", status))
    assert failed.verdict == "No"
    assert 'first ::= "No, "' in la.answer_grammar(failed)
    passed = la.grounding(_history("Did the build pass according to status.txt?", status))
    assert passed.verdict == "Yes"
    assert passed.claims == () and passed.unstated == ()  # a "Yes" the text states
    assert 'first ::= "Yes, "' in la.answer_grammar(passed)
    # a file name and where to look are no claims of the question
    todo = la.grounding(_history("Is renewing the passport on the list in todo.txt?", "1. Renew"))
    assert "todo.txt" not in todo.claims and "according" not in todo.claims
    plain = la.grounding(_history("What does status.txt say?", status))
    assert plain.verdict == "" and '"Yes, "' not in la.answer_grammar(plain)


def test_a_one_number_result_once_stated_ends_the_numbers_of_the_sentence() -> None:
    """'There are 1,  respectively 1, and 1, customers in Paris.' after a COUNT(*) of 1."""
    count = '{"columns": ["COUNT(*)"], "rows": [[1]]}'
    gbnf = la.answer_grammar(la.grounding(_history("How many customers live in Paris?", count)))
    assert f'rnum "°"? (end | (c | ". ") c{{0,{la.MAX_TAIL_ITEMS}}} end)' in gbnf
    assert f"first ::= ({la._LEAD} c{{0,{la.MAX_SENTENCE_ITEMS}}})? (rnum" in gbnf
    # the question's own numbers stay writable, in words too ("12 squared is 144.")
    squared = la.answer_grammar(la.grounding(_history("What is 12 squared?", "144")))
    assert 'qnum ::= "12"' in squared and "(rnum" in squared
    # a formula to restate keeps its numbers before the result ("45 * 12 = 540.")
    calc = la.answer_grammar(la.grounding(_history("What is 45 * 12?", "540")))
    assert "first ::= (lead x{" in calc
    # a text with one number has words to state: unchanged
    text = la.answer_grammar(la.grounding(_history("How long?", "Cook for 3 minutes per side.")))
    assert f'(c | ". ") x{{0,{la.MAX_TAIL_ITEMS}}} stop' in text
    weather = la.answer_grammar(la.grounding(_history("What is the weather in Lima?", LIMA)))
    assert f'(c | ". ") x{{0,{la.MAX_TAIL_ITEMS}}} stop' in weather


def test_a_question_asking_for_one_text_column_is_answered_by_its_value() -> None:
    """'Which customer has id 2?' over [2, "Bo", "Paris"] was answered '... so it is
    Paris': when the question asks for one text column (by its name, or "who" for the
    name), the first sentence states that column's value of the row, not its id."""
    one = '{"columns": ["id", "name", "city"], "rows": [[3, "Chen", "Berlin"]]}'
    who = la.grounding(_history("Who lives in Berlin?", one))
    assert who.labels == ("Chen",) and who.latest == () and who.by_label
    named = la.grounding(_history("What is the name of customer 3?", one))
    assert named.labels == ("Chen",)
    city = la.grounding(_history("Which city is Chen from?", one))
    assert city.labels == ("Berlin",) and city.latest == ()
    # a numeric column is the field binder's: unchanged
    price = '{"columns": ["name", "price"], "rows": [["desk", 240]]}'
    assert la.grounding(_history("What is the price of the desk?", price)).latest == ("240",)


def test_an_answer_sentence_does_not_start_with_the_word_i() -> None:
    """'I renewed the passport.' for the to-do item 'Renew the passport': a sentence of
    the answer may start with "It" or "In", not with the word "I"."""

    gbnf = la._LEAD.replace('"I" [fnst] ', "I[fnst]")
    lead = re.compile(gbnf.replace(" | ", "|"), re.ASCII)
    assert lead.fullmatch("T") and lead.fullmatch("It ") and lead.fullmatch("In ")
    assert lead.fullmatch("It'") and not lead.fullmatch("Its")
    assert not lead.fullmatch("I ") and not lead.fullmatch("I'")
    assert not lead.fullmatch("Ib")  # "Ibought milk": the claim glued
    # "Ithink you buy milk", "Ishould be able to ...": glued after a word's two letters
    assert not lead.fullmatch("Ith") and not lead.fullmatch("Ish")
    todo = la.grounding(_history("What is the last item in todo.txt?", "1. Buy\n2. Renew it\n"))
    assert la._LEAD in la.answer_grammar(todo)


def test_a_word_the_question_numbers_takes_that_number_again() -> None:
    """'What is the total of order 5?' was answered 'The total of order 50.0 is 5.': the
    binder wrote the total after 'order' (the last field word before it was 'total')."""
    binder = la.FieldBinder((("total", "50.0"),), "What is the total of order 5?")
    assert binder(' {"answer": "The total of order ') == "5"
    assert binder(' {"answer": "The total is ') == "50.0"
