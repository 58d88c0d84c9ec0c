// Messages to the user. fuselens.showNotifications filters what the extension and the server say on
// their own (start-up problems, server messages); every message is also written to the log.
// Outcomes of a command the user ran (a refusal, a failure) are always shown: they were asked for.
import * as vscode from 'vscode';
import { MessageType, ShowMessageParams } from 'vscode-languageclient/node';
import { NotificationLevel } from './settings';

const SHOWN: Record<NotificationLevel, MessageType[]> = {
  off: [],
  onError: [MessageType.Error],
  onWarning: [MessageType.Error, MessageType.Warning],
  always: [MessageType.Error, MessageType.Warning, MessageType.Info, MessageType.Log],
};

export class Notifier {
  constructor(private readonly level: () => NotificationLevel, private readonly log: vscode.LogOutputChannel) {}

  /** A message the user did not ask for; returns the action picked, if it was shown. */
  async notify(type: MessageType, message: string, ...actions: string[]): Promise<string | undefined> {
    this.write(type, message);
    if (!SHOWN[this.level()].includes(type)) {
      return undefined;
    }
    return this.show(type, message, actions);
  }

  /** The outcome of something the user asked for: always shown. */
  async answer(type: MessageType, message: string, ...actions: string[]): Promise<string | undefined> {
    this.write(type, message);
    return this.show(type, message, actions);
  }

  fromServer(params: ShowMessageParams): void {
    void this.notify(params.type, params.message);
  }

  private write(type: MessageType, message: string): void {
    if (type === MessageType.Error) {
      this.log.error(message);
    } else if (type === MessageType.Warning) {
      this.log.warn(message);
    } else {
      this.log.info(message);
    }
  }

  private show(type: MessageType, message: string, actions: string[]): Thenable<string | undefined> {
    if (type === MessageType.Error) {
      return vscode.window.showErrorMessage(message, ...actions);
    }
    if (type === MessageType.Warning) {
      return vscode.window.showWarningMessage(message, ...actions);
    }
    return vscode.window.showInformationMessage(message, ...actions);
  }
}
