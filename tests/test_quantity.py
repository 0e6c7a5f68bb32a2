"""Tests for draopt.kube.quantity, mostly ported from apimachinery quantity_test.go."""

from fractions import Fraction

import pytest

from draopt.kube.quantity import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, Quantity, QuantityError

Q = Quantity.parse


# --- TestQuantityParse (value, format) -------------------------------------
PARSE_CASES = [
    ("0", 0, DECIMAL_SI),
    ("0n", 0, DECIMAL_SI),
    ("0u", 0, DECIMAL_SI),
    ("0m", 0, DECIMAL_SI),
    ("0Ki", 0, BINARY_SI),
    ("0k", 0, DECIMAL_SI),
    ("0Mi", 0, BINARY_SI),
    ("0M", 0, DECIMAL_SI),
    ("0Gi", 0, BINARY_SI),
    ("0G", 0, DECIMAL_SI),
    ("0Ti", 0, BINARY_SI),
    ("0T", 0, DECIMAL_SI),
    ("1", 1, DECIMAL_SI),
    ("1Ki", 1024, BINARY_SI),
    ("8Ki", 8 * 1024, BINARY_SI),
    ("7Mi", 7 * 2**20, BINARY_SI),
    ("6Gi", 6 * 2**30, BINARY_SI),
    ("5Ti", 5 * 2**40, BINARY_SI),
    ("4Pi", 4 * 2**50, BINARY_SI),
    ("3Ei", 3 * 2**60, BINARY_SI),
    ("10Ti", 10 * 2**40, BINARY_SI),
    ("100Ti", 100 * 2**40, BINARY_SI),
    ("5n", Fraction(5, 10**9), DECIMAL_SI),
    ("4u", Fraction(4, 10**6), DECIMAL_SI),
    ("3m", Fraction(3, 1000), DECIMAL_SI),
    ("9", 9, DECIMAL_SI),
    ("8k", 8000, DECIMAL_SI),
    ("50k", 50000, DECIMAL_SI),
    ("7M", 7 * 10**6, DECIMAL_SI),
    ("6G", 6 * 10**9, DECIMAL_SI),
    ("5T", 5 * 10**12, DECIMAL_SI),
    ("40T", 4 * 10**13, DECIMAL_SI),
    ("300T", 3 * 10**14, DECIMAL_SI),
    ("2P", 2 * 10**15, DECIMAL_SI),
    ("1E", 10**18, DECIMAL_SI),
    ("1E-3", Fraction(1, 1000), DECIMAL_EXPONENT),
    ("1e3", 1000, DECIMAL_EXPONENT),
    ("1E6", 10**6, DECIMAL_EXPONENT),
    ("1e9", 10**9, DECIMAL_EXPONENT),
    ("1E12", 10**12, DECIMAL_EXPONENT),
    ("1e15", 10**15, DECIMAL_EXPONENT),
    ("1E18", 10**18, DECIMAL_EXPONENT),
    ("1e14", 10**14, DECIMAL_EXPONENT),
    ("1e13", 10**13, DECIMAL_EXPONENT),
    ("100.035k", 100035, DECIMAL_SI),
    ("0.001", Fraction(1, 1000), DECIMAL_SI),
    ("0.0005k", Fraction(1, 2), DECIMAL_SI),
    ("0.005", Fraction(5, 1000), DECIMAL_SI),
    ("0.05", Fraction(5, 100), DECIMAL_SI),
    ("0.5", Fraction(1, 2), DECIMAL_SI),
    ("0.00050k", Fraction(1, 2), DECIMAL_SI),
    ("0.00500", Fraction(5, 1000), DECIMAL_SI),
    ("0.05000", Fraction(5, 100), DECIMAL_SI),
    ("0.50000", Fraction(1, 2), DECIMAL_SI),
    ("0.5e0", Fraction(1, 2), DECIMAL_EXPONENT),
    ("0.5e-1", Fraction(5, 100), DECIMAL_EXPONENT),
    ("0.5e-2", Fraction(5, 1000), DECIMAL_EXPONENT),
    ("10.035M", 10035000, DECIMAL_SI),
    ("1.2e3", 1200, DECIMAL_EXPONENT),
    ("1.3E+6", 1300000, DECIMAL_EXPONENT),
    ("1.40e9", 14 * 10**8, DECIMAL_EXPONENT),
    ("1.53E12", 153 * 10**10, DECIMAL_EXPONENT),
    ("1.6e15", 16 * 10**14, DECIMAL_EXPONENT),
    ("1.7E18", 17 * 10**17, DECIMAL_EXPONENT),
    ("9.01", Fraction(901, 100), DECIMAL_SI),
    ("8.1k", 8100, DECIMAL_SI),
    ("7.123456M", 7123456, DECIMAL_SI),
    ("6.987654321G", 6987654321, DECIMAL_SI),
    ("5.444T", 5444 * 10**9, DECIMAL_SI),
    ("40.1T", 401 * 10**11, DECIMAL_SI),
    ("300.2T", 3002 * 10**11, DECIMAL_SI),
    ("2.5P", 25 * 10**14, DECIMAL_SI),
    ("1.01E", 101 * 10**16, DECIMAL_SI),
    # things that saturate / round
    ("3.001n", Fraction(4, 10**9), DECIMAL_SI),
    ("1.1E-9", Fraction(2, 10**9), DECIMAL_EXPONENT),
    ("0.0000000001", Fraction(1, 10**9), DECIMAL_SI),
    ("0.0000000005", Fraction(1, 10**9), DECIMAL_SI),
    ("0.00000000050", Fraction(1, 10**9), DECIMAL_SI),
    ("0.5e-9", Fraction(1, 10**9), DECIMAL_EXPONENT),
    ("0.9n", Fraction(1, 10**9), DECIMAL_SI),
    ("0.00000012345", Fraction(124, 10**9), DECIMAL_SI),
    ("0.00000012354", Fraction(124, 10**9), DECIMAL_SI),
    ("9Ei", 2**63 - 1, BINARY_SI),
    ("9223372036854775807Ki", 2**63 - 1, BINARY_SI),
    ("12E", 12 * 10**18, DECIMAL_SI),
    # fractional binary
    ("100.035Ki", Fraction(10243584, 100), BINARY_SI),
    ("0.5Mi", 2**19, BINARY_SI),
    ("0.05Gi", Fraction(536870912, 10), BINARY_SI),
    ("0.025Ti", Fraction(274877906944, 10), BINARY_SI),
    # things written by trolls
    ("0.000000000001Ki", Fraction(2, 10**9), DECIMAL_SI),
    (".001", Fraction(1, 1000), DECIMAL_SI),
    (".0001k", Fraction(1, 10), DECIMAL_SI),
    ("1.", 1, DECIMAL_SI),
    ("1.G", 10**9, DECIMAL_SI),
]


@pytest.mark.parametrize("text,value,fmt", PARSE_CASES)
def test_parse(text, value, fmt):
    q = Q(text)
    assert q.value == value
    assert q.format == fmt
    # negative and explicit '+' versions (same format)
    n = Q("-" + text)
    assert n.value == -Fraction(value) and n.format == fmt
    p = Q("+" + text)
    assert p.value == value and p.format == fmt


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        "1.5.5",
        "1Gii",
        "1 Gi",
        "1e",
        "1KI",
        "1k1",
        "--1",
        "1e1.5",
        "Non-Numeric",
        "1g",
        "1ki",
    ],
)
def test_parse_errors(text):
    with pytest.raises(QuantityError) as ei:
        Q(text)
    assert repr(text) in str(ei.value)
    assert isinstance(ei.value, ValueError)


def test_parse_scanner_oddities():
    # parseQuantityString accepts these (TestParseQuantityString)
    assert Q(".").value == 0
    assert Q("-.").value == 0
    # a bare suffix has an empty numerator, which Go's scanner turns into "0"
    assert Q("Gi").value == 0 and Q("Gi").format == BINARY_SI


def test_parse_numbers_like_json():
    assert Q(1).value == 1 and str(Q(1)) == "1"
    assert Q(-1).value == -1
    assert Q(1.5).value == Fraction(3, 2)
    assert str(Q(1024)) == "1024"
    assert Q(1e20).value == 10**20
    with pytest.raises(QuantityError):
        Q(True)
    with pytest.raises(QuantityError):
        Q(float("nan"))
    with pytest.raises(QuantityError):
        Q(None)


# --- canonical strings -------------------------------------------------------
EMIT_CASES = [
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1536Mi", "1536Mi"),
    ("1.5Gi", "1536Mi"),
    ("1G", "1G"),
    ("1000M", "1G"),
    ("1e3", "1e3"),
    ("1000", "1k"),
    ("100m", "100m"),
    ("0.1", "100m"),
    ("1.5", "1500m"),
    ("0", "0"),
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
    ("0.5Ki", "512"),
    ("2048Ki", "2Mi"),
    ("1025Ki", "1025Ki"),
    ("0.0001k", "100m"),
    ("1.08", "1080m"),
    ("1080000000n", "1080m"),
    ("1000u", "1m"),
    (".001e12", "1e9"),
    ("0.001e0", "1e-3"),
    ("1000e-12", "1e-9"),
    ("00", "0"),
    ("0.001T", "1G"),
    ("307200Ki", "300Mi"),
    ("1025024Mi", "1001Gi"),
    ("5000m", "5"),
    ("0.5", "500m"),
    ("1000000000000000000", "1E"),
    ("10000000000000000000", "10E"),
    ("-10000000000000000000000m", "-10E"),
    ("999999999999999999.1", "999999999999999999100m"),
    ("-9223372036854775808.1", "-9223372036854775808100m"),
    ("9223372036854775807", "9223372036854775807"),
    ("1.000000000000000001E", "1000000000000000001"),
    ("9Ei", "9223372036854775807"),
    ("3.001n", "4n"),
    ("100.035Ki", "102435840m"),
    # Go keeps the input string when its parser finds it canonical
    ("1E3", "1E3"),
    ("+1k", "+1k"),
    ("1.G", "1.G"),
    # Go quirk: no suffix for 10^21 in DecimalSI
    ("1000E", "1"),
]


@pytest.mark.parametrize("text,expect", EMIT_CASES)
def test_string(text, expect):
    q = Q(text)
    assert str(q) == expect
    assert q.to_json() == expect
    # the canonical string parses back to the same value
    assert Q(expect).value == q.value or text == "1000E"


@pytest.mark.parametrize("text,expect", [("1Gi", "-1Gi"), ("1.5", "-1500m"), (".001Ki", "-1024m"), ("1000M", "-1G")])
def test_string_negative(text, expect):
    assert str(Q("-" + text)) == expect
    assert str(-Q(text)) == expect


STRING_FROM_VALUE = [
    (2**30, BINARY_SI, "1Gi"),
    (300 * 2**20, BINARY_SI, "300Mi"),
    (6 * 1024, BINARY_SI, "6Ki"),
    (1001 * 2**30, BINARY_SI, "1001Gi"),
    (2**40, BINARY_SI, "1Ti"),
    (5, BINARY_SI, "5"),
    (Fraction(1, 2), BINARY_SI, "500m"),
    (10**9, DECIMAL_SI, "1G"),
    (Fraction(1, 1000), DECIMAL_SI, "1m"),
    (Fraction(80, 1000), DECIMAL_SI, "80m"),
    (Fraction(1080, 1000), DECIMAL_SI, "1080m"),
    (300 * 10**6, DECIMAL_SI, "300M"),
    (10**12, DECIMAL_SI, "1T"),
    (1234567 * 10**6, DECIMAL_SI, "1234567M"),
    (Fraction(1234567, 1000), BINARY_SI, "1234567m"),
    (3000, DECIMAL_SI, "3k"),
    (1025, BINARY_SI, "1025"),
    (0, DECIMAL_SI, "0"),
    (0, BINARY_SI, "0"),
    (10**9, DECIMAL_EXPONENT, "1e9"),
    (Fraction(1, 1000), DECIMAL_EXPONENT, "1e-3"),
    (Fraction(1, 10**9), DECIMAL_EXPONENT, "1e-9"),
    (Fraction(80, 1000), DECIMAL_EXPONENT, "80e-3"),
    (300 * 10**6, DECIMAL_EXPONENT, "300e6"),
    (3000, DECIMAL_EXPONENT, "3e3"),
    (0, DECIMAL_EXPONENT, "0"),
    (Fraction(1, 10**9), DECIMAL_SI, "1n"),
    (Fraction(1080, 10**9), DECIMAL_SI, "1080n"),
    (Fraction(1, 10**6), DECIMAL_SI, "1u"),
    (Fraction(1080, 10**6), DECIMAL_SI, "1080u"),
]


@pytest.mark.parametrize("value,fmt,expect", STRING_FROM_VALUE)
def test_string_from_fraction(value, fmt, expect):
    """TestQuantityString."""
    q = Quantity.from_fraction(value, fmt)
    assert str(q) == expect
    if value:
        assert str(Quantity.from_fraction(-Fraction(value), fmt)) == "-" + expect


def test_from_fraction_rounds_up_to_nano():
    assert Quantity.from_fraction(Fraction(1, 3)).value == Fraction(333333334, 10**9)
    assert Quantity.from_fraction(Fraction(-1, 3)).value == -Fraction(333333334, 10**9)


# --- arithmetic ----------------------------------------------------------------
def test_add_sub_formats():
    # TestAdd / TestSub
    assert (Q("10") + Q("1e1")).value == 20
    r = Q("10Ki") + Q("1")
    assert r.format == BINARY_SI and r.value == 10241
    r = Q("10") + Q("1Ki")
    assert r.format == DECIMAL_SI
    # zero on the left takes the right operand's format (TestQuantityAddZeroPreservesSuffix)
    for text in ["100m", "1Gi"]:
        assert str(Q("0") + Q(text)) == text
        assert str(Q(text) + Q("0")) == text
        assert str(Q(text) - Q("0")) == text
        assert str(Q("0") - Q(text)) == str(-Q(text))
    assert (Q("0") - Q("50")).value == -50
    assert str(Q("1Gi") + Q("512Mi")) == "1536Mi"
    assert str(Q("1Gi") - Q("1.5Gi")) == "-512Mi"
    assert str(Q("100m") + Q("900m")) == "1"
    assert str(Q("1.5") + Q("1Gi")) == "1073741825500m"


def test_mul():
    assert (Q("10") * 10).value == 100
    assert (Q("10Ki") * -1).format == BINARY_SI
    assert str(Q("1Gi") * 3) == "3Gi"
    assert (3 * Q("1Gi")).value == 3 * 2**30
    assert (Q("-50") * -50).value == 2500
    assert (Q(str(2**63 - 1)) * 2).value == 2 * (2**63 - 1)  # exact (Go reports inexact)
    with pytest.raises(TypeError):
        Q("1") * 1.5


def test_neg_and_sign():
    assert str(-Q("9.01")) == "-9010m"
    assert (-(-Q("1Gi"))).value == 2**30
    assert Q("-1").sign() == -1 and Q("0").sign() == 0 and Q("1m").sign() == 1


def test_as_int64_like_go():
    assert Q("1Gi").as_int64() == 2**30
    assert Q("50k").as_int64() == 50000
    assert Q("1000m").as_int64() is None  # int64Amount with negative scale
    assert Q("1.5Gi").as_int64() is None  # inf.Dec representation
    assert Q("9999999999999999999999999999999999999G").as_int64() is None
    assert (Q("50k") + Quantity.from_int(20, DECIMAL_EXPONENT)).as_int64() == 50020
    assert Q("1E").as_int64() == 10**18
    assert Q("1000000000000000000").as_int64() is None


def test_as_approximate_float():
    assert Q("1.5").as_approximate_float() == 1.5
    assert Q("1Gi").as_approximate_float() == float(2**30)
    assert Q("50k").as_approximate_float() == 50000.0


# --- ordering / hashing ----------------------------------------------------------
def test_cmp_and_ordering():
    # TestQuantityCmp
    assert Q("0").cmp(Q("0")) == 0
    assert Q("100m").cmp(Q("50m")) == 1
    assert Q("50m").cmp(Q("100m")) == -1
    assert Q("10000T").cmp(Q("100Gi")) == 1
    assert Q("1Gi") == Q("1024Mi") == Q("1073741824")
    assert Q("200M") == Q("0.2G")
    assert Q("50M") < Q("50Mi")
    assert Q("1") <= Q("1000m") and Q("1") >= Q("1000m")
    assert Q("1Ki") > Q("1k")
    assert sorted([Q("1Gi"), Q("1"), Q("100m"), Q("1M")]) == [Q("100m"), Q("1"), Q("1M"), Q("1Gi")]
    assert hash(Q("1Gi")) == hash(Q("1024Mi"))
    assert len({Q("1Gi"), Q("1024Mi"), Q("1G")}) == 2
    assert Q("1") != 1  # no implicit comparison with plain numbers
    with pytest.raises(TypeError):
        Q("1") < 1


def test_immutable():
    q = Q("1Gi")
    with pytest.raises(AttributeError):
        q.value = Fraction(1)
    import pickle

    q2 = pickle.loads(pickle.dumps(q))
    assert q2 == q and str(q2) == "1Gi" and q2.format == BINARY_SI
