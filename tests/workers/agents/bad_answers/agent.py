"""Answers with text over the size cap, lone surrogates (not encodable as UTF-8) and NUL."""


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 4

    def batch_generate_response(self, queries, images, message_histories):
        answers = []
        for query in queries:
            if "long" in query:
                answers.append("é" * 100_000)  # 200,000 bytes of UTF-8
            elif "broken" in query:
                answers.append("ok \udcff\ud800 and \x00 end")
            else:
                answers.append("plain")
        return answers
