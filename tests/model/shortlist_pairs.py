"""Sentence pairs of token ids whose co-occurrence counts are worked out by hand, for the
shortlist builder's tests and the shortlists the search tests build from them."""

# Three sentence pairs over a vocabulary of 12 (ids 4.. are words; 4 twice in the first source):
#   sources [4 4 5] [4 6] [5]   targets [7 8] [7] [8 9]
# c(4) = 2, c(5) = 2, c(6) = 1; c(4,7) = 2, c(4,8) = 1, c(5,7) = 1, c(5,8) = 2, c(5,9) = 1, c(6,7) = 1
HAND_SRC, HAND_TGT = [[4, 4, 5], [4, 6], [5]], [[7, 8], [7], [8, 9]]
# c(7) = 2, c(8) = 2, c(9) = 1 on the target side
HAND = {
    "p": {(4, 7): 1.0, (4, 8): 0.5, (5, 7): 0.5, (5, 8): 1.0, (5, 9): 0.5, (6, 7): 1.0},  # c(s, t) / c(s)
    "dice": {(4, 7): 1.0, (4, 8): 0.5, (5, 7): 0.5, (5, 8): 1.0, (5, 9): 2 / 3, (6, 7): 2 / 3},  # 2 c(s, t) / (c(s) + c(t))
}

