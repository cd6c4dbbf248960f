import pickle


def convert(path):
    import torch as T  # binds T in this function only
    return T.load(path, weights_only=True)  # expect: TL601


# --- near misses: must stay silent -------------------------------------------
def restore(T, path):
    # `T` is a parameter here (a checkpoint reader), not the torch imported in convert().
    return T.load(path)


def reload(path):
    T = pickle
    return T.load(path)
