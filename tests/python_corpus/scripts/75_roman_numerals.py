# Roman numerals both ways, checked by a round trip.
VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
def to_roman(n):
    out = ""
    for v, s in VALUES:
        while n >= v:
            out += s
            n -= v
    return out
def from_roman(s):
    lookup = {sym: v for v, sym in VALUES if len(sym) == 1}
    total = 0
    for i, ch in enumerate(s):
        v = lookup[ch]
        if i + 1 < len(s) and lookup[s[i + 1]] > v:
            total -= v
        else:
            total += v
    return total
nums = [4, 9, 14, 1994, 2024]
romans = [to_roman(n) for n in nums]
{"romans": romans, "round_trip": [from_roman(r) for r in romans] == nums}
